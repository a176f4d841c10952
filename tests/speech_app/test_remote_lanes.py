"""Remote speech lanes: registry lanes in `api` mode that speak the OpenAI audio API,
as self-hosted speech servers do, used by render, transcription and the agent alike,
in the cost policy's order, with failover, cooldowns and this process's engines as
the fallback. The servers are fakes on loopback that speak the real wire format
(tests/speech_app/speech_server.py); everything else is the product's own."""
import json
from urllib.parse import quote

import pytest

from agent_app import conversation
from agent_app.audio import WireFormat
from gateway_app.models import LaneUsage
from registry_app import snapshot
from registry_app.lanes.config import lane_variable
from registry_app.models import LaneCooldown
from speech_app import tts
from speech_app.decode import decode_to_pcm
from speech_app.errors import SttBusy, TtsUnavailable
from speech_app.lanes import LaneRecognizer, LaneSynthesizer
from speech_app.openai_audio import call_url
from speech_app.remote import plain_wav
from speech_app.services import recognizer_for, synthesizer_for
from speech_app.spoken import spoken_form
from speech_app.stt import Deadline
from tests.conftest import make_client
from tests.speech_app.audio_samples import encode, silence, tone
from tests.speech_app.conftest import KOREAN_PHRASES, b64, korean_mp3
from tests.speech_app.speech_server import RATE, SECONDS_PER_CHARACTER, load, stt_lane, tone_wav, tts_lane

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("render_cache_dir")]

HEARD = "Rufen Sie mich bitte unter 0221 487693 zurück"


@pytest.fixture(autouse=True)
def _lane_defaults(settings):
    """The documented defaults of calling lanes, whatever the environment says; a
    short timeout, so that the slow server's lane gives up quickly."""
    snapshot.invalidate()
    settings.GATEWAY_MODE = "mock"
    settings.GATEWAY_MAX_EUR = 0.0
    settings.GATEWAY_LANE_SETTINGS = {}
    settings.GATEWAY_TIMEOUT_SEC = 0.5
    yield
    snapshot.invalidate()


def speak(api, text, **body):
    return api.post("/api/voice/speak", {"text": text, **body}, format="json")


def sent(server, n=-1):
    return server.requests[n][2]


def cooled_down():
    return {cooldown.lane_id: cooldown.reason for cooldown in LaneCooldown.objects.all()}


@pytest.fixture
def api(key_a):
    return make_client(key_a)


# --- Speaking ---

def test_render_speaks_through_a_free_remote_lane_with_its_own_voice(api_a, speech_server):
    server = speech_server()
    load(tts_lane("tts-kokoro-de", server.url))
    response = api_a.post("/v2/audio/render", {"touchpoint": "inbound.greeting",
                                               "variables": {"companyName": "Muster GmbH"}}, format="json")
    assert response.status_code == 200, response.content
    assert (response["Content-Type"], response["X-Render-Cache"]) == ("audio/mpeg", "miss")
    path, headers, body = server.requests[0]
    assert path == "/v1/audio/speech" and "Authorization" not in headers  # a server of one's own needs no key
    assert (body["model"], body["voice"], body["response_format"]) == ("kokoro", "de_kerstin", "wav")
    # The lane's audio (a tone as long as its text), encoded as every render is.
    spoken_seconds = sum(max(0.2, SECONDS_PER_CHARACTER * len(sent(server, n)["input"]))
                         for n in range(len(server.requests)))
    assert decode_to_pcm(response.content).duration_sec == pytest.approx(spoken_seconds, abs=0.15)
    usage = LaneUsage.objects.get(lane_id="tts-kokoro-de")
    assert (usage.mode, usage.requests, usage.failures, usage.eur) == ("api", 1, 0, 0)

    asked = len(server.requests)
    again = api_a.post("/v2/audio/render", {"touchpoint": "inbound.greeting",
                                            "variables": {"companyName": "Muster GmbH"}}, format="json")
    assert (again["X-Render-Cache"], again["ETag"]) == ("hit", response["ETag"])
    assert len(server.requests) == asked  # from the cache: the server was not asked again
    assert LaneUsage.objects.get(lane_id="tts-kokoro-de").requests == 1


def test_the_remote_voice_hears_the_german_spoken_form(api, speech_server):
    server = speech_server()
    load(tts_lane("tts-kokoro-de", server.url))
    text = "Rufen Sie uns unter 0221 487693 an, Mo–Fr bis 18:30 Uhr."
    assert speak(api, text).status_code == 200
    assert sent(server)["input"] == spoken_form(text)
    assert not any(character.isdigit() for character in sent(server)["input"])


def test_a_voice_the_lane_lists_is_asked_for_and_any_other_voice_stays_here(api, speech_server):
    server = speech_server()
    load(tts_lane("tts-kokoro-de", server.url))
    assert speak(api, "Guten Tag.", voice="de_thorsten").status_code == 200
    assert sent(server)["voice"] == "de_thorsten"
    asked = len(server.requests)
    local = speak(api, "Guten Tag.", voice="de+f3")  # an eSpeak NG voice: this process speaks it
    assert local.status_code == 200 and decode_to_pcm(local.content).duration_sec > 0.3
    assert len(server.requests) == asked


def test_an_espeak_voice_renders_exactly_as_without_a_remote_lane(api, speech_server):
    before = speak(api, "Guten Tag.", voice="de+f3")
    server = speech_server()
    load(tts_lane("tts-kokoro-de", server.url))
    after = speak(api, "Guten Tag.", voice="de+f3")
    assert after["ETag"] == before["ETag"] and server.requests == []  # the same engine, voice and text


def test_a_lane_that_lists_no_such_language_is_not_asked(api, speech_server):
    server = speech_server()
    load(tts_lane("tts-kokoro-de", server.url, languages=["de"]))
    assert speak(api, "Good morning.", voice="en").status_code == 200
    assert server.requests == []


def test_without_a_remote_lane_the_engines_of_this_process_are_used_as_before(speech_server):
    load()  # the shipped registry: its hosted lanes have no key, no HTTP endpoint
    assert type(synthesizer_for("de")) is tts.EspeakSynthesizer
    assert recognizer_for("de").id == "whisper"
    server = speech_server()
    load(tts_lane("tts-kokoro-de", server.url), stt_lane("stt-whisper-gpu", server.url))
    assert isinstance(synthesizer_for("de"), LaneSynthesizer) and isinstance(recognizer_for("de"), LaneRecognizer)


# --- Hearing ---

def test_transcribe_hears_through_a_remote_lane_with_words_segments_and_entities(api_a, speech_server):
    server = speech_server(text=HEARD)
    load(stt_lane("stt-whisper-gpu", server.url))
    audio = encode(tone(1.5), 16000, "mp3")
    response = api_a.post("/v2/audio/transcribe", {"audio_base64": b64(audio)}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["text"], body["engine"], body["model"], body["language"]) == (
        HEARD, "openai-audio", "Systran/faster-whisper-large-v3", "de")
    assert [word["word"] for word in body["words"]] == HEARD.split()
    assert {word["conf"] for word in body["words"]} == {0.875}
    assert body["segments"] == [{"start": 0.0, "end": pytest.approx(body["durationSec"], abs=0.05), "text": HEARD}]
    assert {"type": "phone", "text": "0221 487693", "value": "+49221487693"} in body["entities"]

    path, headers, fields = server.requests[0]
    assert path == "/v1/audio/transcriptions" and headers["Content-Type"].startswith("multipart/form-data")
    assert fields["model"] == ["Systran/faster-whisper-large-v3"] and fields["language"] == ["de"]
    assert fields["response_format"] == ["verbose_json"]
    assert fields["timestamp_granularities[]"] == ["word", "segment"]
    assert decode_to_pcm(fields["file"][0]).duration_sec == pytest.approx(body["durationSec"], abs=0.01)
    usage = LaneUsage.objects.get(lane_id="stt-whisper-gpu")
    assert (usage.requests, usage.audio_seconds) == (1, pytest.approx(body["durationSec"], abs=0.01))


def test_the_speech_module_sends_phrases_as_a_prompt_and_auto_lets_the_server_detect(api, speech_server):
    server = speech_server(text="Good morning", language="english")
    load(stt_lane("stt-whisper-gpu", server.url))
    audio = encode(tone(1.0), 16000, "wav")
    response = api.generic("POST", "/api/voice/transcribe?language=auto&phrase=Termin&phrase=R%C3%BCckruf", audio,
                           content_type="audio/wav")
    assert response.status_code == 200, response.content
    assert response.json()["language"] == "en"  # OpenAI's servers name it, ours take the code
    fields = server.requests[0][2]
    assert fields["prompt"] == ["Termin, Rückruf"] and "language" not in fields


# --- The agent ---

def test_the_agent_hears_and_speaks_through_remote_lanes(speech_server):
    stt, voice = speech_server(text="Ich hätte gern einen Termin am Montag."), speech_server()
    load(stt_lane("stt-whisper-gpu", stt.url), tts_lane("tts-kokoro-de", voice.url))
    assert conversation.hear(silence(1.2), language="de") == "Ich hätte gern einen Termin am Montag."
    wire = WireFormat("pcm_s16le", 8000)
    audio = conversation.speak_whole("Gern, am Montag um 10 Uhr.", language="de", voice=None, wire=wire)
    assert sent(voice)["input"] == spoken_form("Gern, am Montag um 10 Uhr.")
    assert wire.seconds_of(audio) == pytest.approx(SECONDS_PER_CHARACTER * len(sent(voice)["input"]), abs=0.05)


def test_the_agents_warm_up_loads_this_processs_engine_and_asks_no_server(speech_server, monkeypatch):
    server = speech_server()
    load(stt_lane("stt-whisper-gpu", server.url))
    warmed = []
    monkeypatch.setattr(conversation, "local_recognizer", lambda language: type(
        "Engine", (), {"hear": lambda self, pcm, **kw: warmed.append(len(pcm))})())
    conversation.get_ready(language="de")
    assert warmed == [16000] and server.requests == []


# --- Failover, cooldowns, fallback ---

FAILURES = {
    "fail": ("server_error", True),  # 500
    "slow": ("timeout", True),
    "html": ("bad_response", False),  # the wrong content type
    "huge": ("bad_response", False),  # more than the answer may have
}


@pytest.mark.parametrize("behaviour", FAILURES)
def test_speaking_fails_over_to_the_next_remote_lane(api, speech_server, behaviour):
    failing, answering = speech_server(behaviour), speech_server()
    load(tts_lane("tts-first", failing.url, priority=1), tts_lane("tts-second", answering.url, priority=2))
    response = speak(api, "Guten Tag.")
    assert response.status_code == 200, response.content
    assert len(failing.requests) == 1 and len(answering.requests) == 1
    outcome, cools_down = FAILURES[behaviour]
    assert set(cooled_down()) == ({"tts-first"} if cools_down else set())
    if cools_down:
        assert cooled_down()["tts-first"].startswith(outcome)
    assert LaneUsage.objects.get(lane_id="tts-first").failures == 1
    assert LaneUsage.objects.get(lane_id="tts-second").requests == 1

    speak(api, "Auf Wiederhören.")
    # A lane in a cooldown is not asked until it ends; one that answered nonsense is asked again.
    assert len(failing.requests) == (1 if cools_down else 2)


@pytest.mark.parametrize("behaviour", FAILURES)
def test_hearing_fails_over_to_the_next_remote_lane(api, speech_server, behaviour):
    failing, answering = speech_server(behaviour), speech_server(text="Hallo")
    load(stt_lane("stt-first", failing.url, priority=1), stt_lane("stt-second", answering.url, priority=2))
    response = api.generic("POST", "/api/voice/transcribe", encode(tone(1.0), 16000, "wav"), content_type="audio/wav")
    assert response.status_code == 200, response.content
    assert response.json()["text"] == "Hallo"
    assert set(cooled_down()) == ({"stt-first"} if FAILURES[behaviour][1] else set())


def test_speech_falls_back_to_this_process_when_every_remote_lane_fails(api, speech_server):
    down, slow = speech_server("fail"), speech_server("slow")
    load(tts_lane("tts-first", down.url, priority=1), tts_lane("tts-second", slow.url, priority=2))
    response = speak(api, "Guten Tag, hier spricht die Praxis.")
    assert response.status_code == 200, response.content
    assert decode_to_pcm(response.content).duration_sec > 1.0  # eSpeak NG's speech
    assert set(cooled_down()) == {"tts-first", "tts-second"}


def test_hearing_falls_back_to_this_process_when_every_remote_lane_fails(api, speech_server, korean_model):
    down = speech_server("fail")
    load(stt_lane("stt-first", down.url, languages=["ko"]))
    phrases = "&".join(f"phrase={quote(phrase)}" for phrase in KOREAN_PHRASES)
    response = api.generic("POST", f"/api/voice/transcribe?language=ko&{phrases}", korean_mp3("안녕하세요"),
                           content_type="audio/mpeg")
    assert response.status_code == 200, response.content
    assert (response.json()["text"], response.json()["engine"]) == ("안녕하세요", "vosk")
    assert len(down.requests) == 1 and set(cooled_down()) == {"stt-first"}


def test_a_voice_only_a_remote_lane_has_is_spoken_here_in_its_language_when_the_lane_fails(api, speech_server):
    down = speech_server("fail")
    load(tts_lane("tts-kokoro-de", down.url))
    response = speak(api, "Guten Tag.", voice="de_thorsten")
    assert response.status_code == 200, response.content  # not unknown_voice: eSpeak NG speaks German


@pytest.mark.parametrize("behaviour, detail", [
    ("huge", "the answer announces 1073741824 bytes, more than 10485760"),  # refused unread
    ("endless", "the answer is larger than 10485760 bytes"),  # read up to the limit, then refused
])
def test_a_huge_answer_is_refused_without_being_read_whole(settings, speech_server, behaviour, detail):
    settings.GATEWAY_STATIC_TOKEN = "gateway-test-token-0123456789"
    flood, answering = speech_server(behaviour), speech_server()
    load(tts_lane("tts-first", flood.url, priority=1), tts_lane("tts-second", answering.url, priority=2))
    response = make_client(settings.GATEWAY_STATIC_TOKEN).post("/v1/speak", {"text": "Guten Tag."}, format="json")
    assert response.status_code == 200, response.content
    attempts = json.loads(response["X-Gateway-Attempts"])
    assert [(a["lane"], a["outcome"], a.get("detail")) for a in attempts] == [
        ("tts-first", "bad_response", detail), ("tts-second", "ok", None)]
    assert flood.finished.wait(10)
    # It offered a gigabyte; what it got out before the client hung up is the client's
    # limit at most, plus what the sockets' buffers took.
    assert flood.sent < 32 * 1024 * 1024
    assert not cooled_down()


def test_the_stream_hands_the_rest_to_the_next_lane_when_a_lane_fails_midway(speech_server):
    server = speech_server(fail_after=1)  # the first sentence, then 500s
    load(tts_lane("tts-kokoro-de", server.url))
    engine = synthesizer_for("de")
    pieces = list(engine.stream("Erster Satz. Zweiter Satz. Dritter Satz.", voice="de"))
    assert [piece.sample_rate for piece in pieces] == [RATE, 22050, 22050]  # the lane's, then eSpeak NG's
    assert len(server.requests) == 2 and set(cooled_down()) == {"tts-kokoro-de"}


# --- The cost policy ---

def test_a_paid_remote_lane_is_a_fallback_within_the_budget_only(api, speech_server, settings, monkeypatch):
    hosted = speech_server()
    load(tts_lane("tts-hosted", hosted.url, eur=15.0, priority=1))
    settings.GATEWAY_LANE_SETTINGS = {lane_variable("tts-hosted", "KEY"): "sk-test"}

    assert speak(api, "Guten Tag.").status_code == 200  # eSpeak NG: free, so before any paid lane
    assert hosted.requests == []

    def broken(self, text, *, voice):
        raise TtsUnavailable("eSpeak NG is not installed.")

    monkeypatch.setattr(tts.EspeakSynthesizer, "synthesize", broken)
    refused = speak(api, "Hallo.")
    assert refused.status_code == 503 and hosted.requests == []  # no budget (GATEWAY_MAX_EUR 0)
    settings.GATEWAY_MAX_EUR = 0.01
    assert speak(api, "Hallo!").status_code == 200
    path, headers, body = hosted.requests[0]
    assert headers["Authorization"] == "Bearer sk-test"
    usage = LaneUsage.objects.get(lane_id="tts-hosted")
    assert float(usage.eur) == pytest.approx(15.0 * len("Hallo!") / 1_000_000, abs=1e-6)


# --- The wire format ---

def test_endpoints_are_a_servers_base_or_the_calls_own_url():
    assert call_url("http://gpu:8000", "audio/speech") == "http://gpu:8000/v1/audio/speech"
    assert call_url("http://gpu:8000/v1/", "audio/transcriptions") == "http://gpu:8000/v1/audio/transcriptions"
    assert call_url("https://x.example/v1/audio/speech", "audio/speech") == "https://x.example/v1/audio/speech"
    assert call_url("https://proxy.example/speech/de", "audio/speech") == "https://proxy.example/speech/de"


def test_a_streamed_wav_keeps_its_rate_and_an_mp3_answer_is_decoded(speech_server):
    streamed = plain_wav(tone_wav(0.5, streamed=True))
    assert (streamed.sample_rate, streamed.duration_sec) == (RATE, pytest.approx(0.5, abs=0.01))
    server = speech_server("mp3")
    load(tts_lane("tts-kokoro-de", server.url))
    speech = synthesizer_for("de").synthesize("Guten Tag.", voice="de")
    assert speech.sample_rate == 16000 and speech.duration_sec == pytest.approx(0.2, abs=0.1)


def test_recognition_through_lanes_keeps_the_callers_deadline(speech_server, korean_model):
    server = speech_server("slow")
    load(stt_lane("stt-whisper-gpu", server.url, languages=["ko"]))
    # The server may take at most what is left of the deadline, and this process's
    # engine gets the rest: none, so it says so (stt_busy) instead of running over.
    with pytest.raises(SttBusy):
        recognizer_for("ko").transcribe(silence(1.0), language="ko", deadline=Deadline(0.2))
    assert len(server.requests) == 1 and set(cooled_down()) == {"stt-whisper-gpu"}
