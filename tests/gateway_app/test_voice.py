"""The voice gateway: /v1/speak and /v1/transcribe through the registry's tts and stt
lanes, this process's real engines first (eSpeak NG, the real Korean Vosk model),
hosted speech APIs (fake providers on loopback) after them, with budget and cooldown."""
import datetime
import json
from urllib.parse import quote

import pytest
from django.utils import timezone

from gateway_app.models import LaneUsage
from gateway_app.services import answer_through
from registry_app.lanes.cost import Measures
from registry_app.models import LaneCooldown
from registry_app.services import lane_cooldown_start
from speech_app.decode import decode_to_pcm
from speech_app.errors import SttUnavailable, UndecodableAudio
from speech_app.lanes import plan_steps, stt_plan
from speech_app.remote import wav_from_pcm
from speech_app.stt import Deadline
from tests.conftest import error_of
from tests.gateway_app.conftest import SHIPPED, load_document, load_lanes
from tests.speech_app.audio_samples import encode, silence
from tests.speech_app.conftest import KOREAN_PHRASES, korean_mp3

pytestmark = pytest.mark.usefixtures("render_cache_dir")


def speak(gateway, **body):
    return gateway.post("/v1/speak", body, format="json")


def transcribe(gateway, audio, query=""):
    return gateway.generic("POST", f"/v1/transcribe{query}", audio, content_type="audio/mpeg")


def as_batch(entry):
    """A shipped hosted lane as a server of the OpenAI audio API (no streaming `params.protocol`)."""
    return dict(entry, params={key: value for key, value in entry["params"].items() if key != "protocol"})


def lane_of(lane_id):
    return as_batch(next(entry for entry in SHIPPED["models"] if entry["id"] == lane_id))


def test_german_text_is_spoken_by_the_local_espeak_lane(gateway):
    load_document(SHIPPED)
    response = speak(gateway, text="Guten Tag, hier ist die Praxis Doktor Berger.")
    assert response.status_code == 200
    assert response["Content-Type"] == "audio/mpeg"
    assert response["X-Gateway-Lane"] == "tts-espeak-de" and response["X-Gateway-Mode"] == "local"
    assert json.loads(response["X-Gateway-Attempts"])[0]["outcome"] == "ok"
    assert decode_to_pcm(response.content).duration_sec > 1.0  # real speech
    row = LaneUsage.objects.get(lane_id="tts-espeak-de")
    assert (row.requests, row.characters, row.mode) == (1, 45, "local")
    assert row.audio_seconds == pytest.approx(float(response["X-Duration-Sec"]), abs=0.01)


@pytest.mark.slow  # real synthesis and recognition
def test_without_a_registry_the_local_engines_speak_and_hear(gateway, korean_model):
    spoken = speak(gateway, text="안녕하세요 감사합니다", voice="ko+f3")
    assert spoken.status_code == 200 and spoken["X-Gateway-Lane"] == "tts-local"
    phrases = "&".join(f"phrase={quote(phrase)}" for phrase in KOREAN_PHRASES)
    heard = transcribe(gateway, spoken.content, f"?language=ko&{phrases}")
    assert heard.status_code == 200, heard.content
    body = heard.json()
    # The words said, last (see tests/speech_app/test_transcribe.py: at times Vosk's grammar
    # matches one more of its phrases to the onset of a varying eSpeak synthesis).
    assert body["text"].endswith("안녕하세요 감사합니다"), body["text"]
    assert (body["lane"], body["mode"], body["language"], body["engine"]) == ("stt-local", "local", "ko", "vosk")
    assert [(a["lane"], a["outcome"]) for a in body["attempts"]] == [("stt-local", "ok")]


@pytest.mark.slow  # real synthesis and recognition
def test_a_language_no_registry_lane_lists_goes_to_the_local_engines(gateway, korean_model):
    load_document(SHIPPED)  # its only local stt lane is German
    body = transcribe(gateway, korean_mp3("안녕하세요"), "?language=ko&phrase=" + quote("안녕하세요")).json()
    assert (body["lane"], body["text"]) == ("stt-local", "안녕하세요")


@pytest.fixture
def azure(provider, lane_settings):
    """The shipped registry's hosted German tts lane as an OpenAI audio API server, with a
    key and a fake endpoint."""
    fake = provider("audio", audio=korean_mp3("안녕하세요"))  # real MP3 bytes
    load_document(dict(SHIPPED, models=[as_batch(entry) if entry["id"] == "tts-azure-de" else entry
                                        for entry in SHIPPED["models"]]))
    lane_settings("tts-azure-de", endpoint=fake.url.replace("chat/completions", "audio/speech"), key="az-key")
    return fake


def test_a_hosted_tts_lane_answers_when_the_local_one_is_cooling_down(gateway, azure):
    lane_cooldown_start(lane_id="tts-espeak-de", seconds=60, reason="connection_error: test")
    response = speak(gateway, text="Guten Tag", max_eur=0.01)
    assert response.status_code == 200, response.content
    assert (response["X-Gateway-Lane"], response["X-Gateway-Mode"]) == ("tts-azure-de", "api")
    # The lane's audio, encoded as every render is (it answered MP3 though WAV was asked).
    assert decode_to_pcm(response.content).duration_sec == pytest.approx(decode_to_pcm(azure.audio).duration_sec,
                                                                         abs=0.1)
    attempts = json.loads(response["X-Gateway-Attempts"])
    assert [(a["lane"], a["outcome"]) for a in attempts] == [("tts-espeak-de", "cooldown"), ("tts-azure-de", "ok")]
    assert float(response["X-Gateway-Cost-Eur"]) == pytest.approx(14.5 * 9 / 1_000_000, abs=1e-6)
    path, headers, sent = azure.requests[0]
    assert headers["Authorization"] == "Bearer az-key"
    # The lane's own voice (params.voices): the request named none.
    assert sent == {"model": "tts-azure-de", "input": "Guten Tag", "voice": "de-DE-KatjaNeural",
                    "response_format": "wav"}


def test_a_hosted_tts_lane_is_untouched_while_the_local_lane_answers(gateway, azure):
    assert speak(gateway, text="Guten Tag", max_eur=1)["X-Gateway-Lane"] == "tts-espeak-de"
    assert azure.requests == []


def test_the_hosted_tts_lane_needs_a_budget(gateway, azure):
    lane_cooldown_start(lane_id="tts-espeak-de", seconds=60, reason="test")
    response = speak(gateway, text="Guten Tag")  # GATEWAY_MAX_EUR is 0
    assert response.status_code == 503
    # The streaming lanes (Cartesia, ElevenLabs) are the voice agent's: skipped here.
    assert [a["outcome"] for a in error_of(response)["details"]["attempts"]] == [
        "cooldown", "over_budget", "unavailable", "unavailable"]
    assert azure.requests == []


def test_a_hosted_tts_answer_that_is_no_audio_is_a_bad_response(gateway, azure):
    azure.behaviour = "garbage"
    lane_cooldown_start(lane_id="tts-espeak-de", seconds=60, reason="test")
    attempts = error_of(speak(gateway, text="Guten Tag", max_eur=1))["details"]["attempts"]
    assert {a["lane"]: a["outcome"] for a in attempts}["tts-azure-de"] == "bad_response"


def test_a_hosted_stt_lane_hears_when_no_local_lane_can(gateway, provider, lane_settings):
    fake = provider("transcript", text="Guten Tag")
    hosted = dict(lane_of("stt-deepgram"), status="key-ready", endpoint=fake.url)
    local = lane_of("stt-vosk-de")
    load_lanes(local, hosted)
    lane_settings("stt-deepgram", key="dg-key")
    lane_cooldown_start(lane_id="stt-vosk-de", seconds=60, reason="test")
    audio = encode(silence(3.0), 16000, "wav")
    response = gateway.generic("POST", "/v1/transcribe?max_eur=0.01", audio, content_type="audio/wav")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["text"], body["lane"], body["mode"], body["durationSec"]) == ("Guten Tag", "stt-deepgram", "api", 3.0)
    assert body["costEur"] == pytest.approx(0.004 * 3 / 60)
    path, headers, sent = fake.requests[0]
    assert headers["Authorization"] == "Bearer dg-key"
    assert headers["Content-Type"].startswith("multipart/form-data; boundary=")
    # What was decoded, as 16 kHz mono WAV: one format every server takes.
    assert wav_from_pcm(silence(3.0)) in sent and b'name="language"\r\n\r\nde\r\n' in sent


def test_a_local_engine_that_cannot_serve_moves_on_without_a_cooldown(db, provider, lane_settings):
    fake = provider("transcript", text="Hallo")
    load_lanes(lane_of("stt-vosk-de"), dict(lane_of("stt-deepgram"), status="key-ready", endpoint=fake.url))
    lane_settings("stt-deepgram", key="dg-key")

    def no_model(timeout):
        raise SttUnavailable("No speech recognition model is installed for 'de'.")

    steps = plan_steps(stt_plan("de", always_local=False), measures=Measures(audio_seconds=1.0), max_eur=1,
                       local_call=no_model, remote_call=lambda engine, timeout: engine.transcribe(
                           silence(1.0), language="de", deadline=Deadline(timeout)))
    answer = answer_through(steps, max_eur=1, what="stt")
    assert answer.result.text == "Hallo"
    assert [(a.lane, a.outcome, a.detail) for a in answer.attempts] == [
        ("stt-vosk-de", "unavailable", "No speech recognition model is installed for 'de'."),
        ("stt-deepgram", "ok", "")]
    assert not LaneCooldown.objects.exists()  # about this request's language, not the lane


def test_a_client_mistake_found_by_a_local_engine_ends_the_request(db, provider, lane_settings):
    fake = provider("transcript")
    load_lanes(lane_of("stt-vosk-de"), dict(lane_of("stt-deepgram"), status="key-ready", endpoint=fake.url))
    lane_settings("stt-deepgram", key="dg-key")

    def undecodable(timeout):
        raise UndecodableAudio()

    steps = plan_steps(stt_plan("de", always_local=False), measures=Measures(), max_eur=1, local_call=undecodable,
                       remote_call=lambda engine, timeout: pytest.fail("never called"))
    with pytest.raises(UndecodableAudio):
        answer_through(steps, max_eur=1, what="stt")
    assert fake.requests == []


@pytest.mark.parametrize("body, status, code", [
    ({}, 400, "validation_error"), ({"text": ""}, 400, "validation_error"), ({"text": 5}, 400, "validation_error"),
    ({"text": "x" * 5001}, 400, "validation_error"), ({"text": "Hallo", "voice": "de+f3; rm"}, 400, "unknown_voice"),
    ({"text": "Hallo", "language": "Deutsch"}, 400, "validation_error"),
    ({"text": "Hallo", "max_eur": -1}, 400, "validation_error"),
])
def test_bad_speak_requests_are_client_errors(gateway, body, status, code):
    response = speak(gateway, **body)
    assert (response.status_code, error_of(response)["code"]) == (status, code)


def test_bad_transcribe_requests_are_client_errors(gateway, settings):
    settings.GATEWAY_MAX_AUDIO_SEC = 2
    cases = [(b"", "", 400, "empty_audio"), (b"not audio at all" * 10, "", 422, "undecodable_audio"),
             (encode(silence(3.0), 16000, "wav"), "", 413, "audio_too_long"),
             (encode(silence(1.0), 16000, "wav"), "?language=Deutsch", 400, "validation_error"),
             (encode(silence(1.0), 16000, "wav"), "?phrase=", 400, "validation_error")]
    for audio, query, status, code in cases:
        response = gateway.generic("POST", f"/v1/transcribe{query}", audio, content_type="audio/wav")
        assert (response.status_code, error_of(response)["code"]) == (status, code), (query, response.content)
    assert not LaneUsage.objects.exists()  # nothing was asked of any lane


def test_expired_cooldowns_of_voice_lanes_are_cleared_by_the_next_success(gateway):
    load_document(SHIPPED)
    past = timezone.now() - datetime.timedelta(minutes=5)
    lane_cooldown_start(lane_id="tts-espeak-de", seconds=1, reason="test", now=past)
    assert speak(gateway, text="Hallo")["X-Gateway-Lane"] == "tts-espeak-de"
    assert not LaneCooldown.objects.exists()
