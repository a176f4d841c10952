"""German speech becomes text out of the box: the product's own synthesis, heard back
through POST /v2/audio/transcribe by the bundled Whisper model (issue 10).

The clips are spoken with eSpeak NG's `de+m3` voice: eSpeak at its default speed is a
poor stand-in for a person, and Whisper base hears this variant best of the German
voices measured (docs/performance-history.md has the figures per voice). Word error rates are
computed after the normalisation of tests/speech_app/wer.py.
"""
import pytest

from speech_app.decode import decode_to_pcm
from speech_app.encode import mp3_from_pcm
from tests.conftest import error_of
from tests.speech_app.audio_samples import encode
from tests.speech_app.conftest import b64
from tests.speech_app.synthesis import synthesised
from tests.speech_app.voicemails import VOICEMAILS
from tests.speech_app.wer import normalised, word_error_rate

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _hearing_not_speed(settings):
    """What Whisper hears is under test here, not how fast (bench/bench_whisper.py): on a
    machine busy with other work a recognition takes many times its usual time, so the
    deadline is generous unless a test sets its own."""
    settings.STT_DEADLINE_BASE_SEC = settings.STT_DEADLINE_MAX_SEC = 120

URL = "/v2/audio/transcribe"
VOICE = "de+m3"
MAX_WER = 0.30  # the mean over the voicemails
MAX_SENTENCE_WER = 0.75  # any one of them: most of its words heard
# Heard alike from every container in 14 syntheses of 14 (ogg/webm word error rate
# against the WAV 0.0). The phone number's sentence is not: Whisper base is unsure of
# "mich zurück" at the edge, and one synthesis in ten tipped it in Opus (0.29).
CONTAINER_CLIP = VOICEMAILS[3]
ENGLISH = "Good morning, I would like to book an appointment for next week."


def mp3_of(text, voice=VOICE):
    """`text` as the product renders it (eSpeak NG, then MP3), the same in every run."""
    speech = synthesised(text, voice=voice)
    return mp3_from_pcm(speech.pcm, speech.sample_rate)


def transcribe(client, audio, **fields):
    return client.post(URL, {"audio_base64": b64(audio), **fields}, format="json")


def test_german_voicemails_come_back_as_german_text(api_a, whisper_ready):
    rates = {}
    for sentence in VOICEMAILS:
        response = transcribe(api_a, mp3_of(sentence), filename="voicemail.mp3")
        assert response.status_code == 200, response.content
        body = response.json()
        assert (body["engine"], body["model"], body["language"]) == ("faster-whisper", "whisper-base", "de")
        rates[body["text"]] = word_error_rate(sentence, body["text"])
    # The mean over the sentences: one short synthetic sentence is fragile with Whisper
    # base, and eSpeak's samples differ between syntheses. Six syntheses each on
    # 2026-11-24: means 0.14, 0.32, 0.14, 0.03 (mean 0.16); "Frau Müller aus Köln"
    # ranged 0.17-0.50, which failed a bound of 0.30 per sentence every other run.
    assert sum(rates.values()) / len(rates) <= MAX_WER, rates
    assert max(rates.values()) <= MAX_SENTENCE_WER, rates


def test_words_and_segments_carry_timings_within_the_audio(api_a, whisper_ready):
    body = transcribe(api_a, mp3_of(VOICEMAILS[0])).json()
    assert set(body) == {"text", "words", "segments", "durationSec", "engine", "model", "language", "entities"}
    assert body["segments"] and " ".join(segment["text"] for segment in body["segments"]) == body["text"]
    assert [word["word"] for word in body["words"]] == body["text"].split()
    for item in body["words"] + body["segments"]:
        assert 0 <= item["start"] <= item["end"] <= body["durationSec"] + 0.05
    assert all(0 <= word["conf"] <= 1 for word in body["words"])


@pytest.fixture(scope="module")
def clip_pcm():
    # One clip for every container: the synthesis is the same in every run
    # (tests/speech_app/synthesis.py), and the sentence's own bound is checked by the voicemail test.
    return decode_to_pcm(mp3_of(CONTAINER_CLIP)).pcm


@pytest.mark.parametrize("kind", ["flac", "ogg", "webm"])
def test_the_same_clip_in_every_container_is_heard_as_from_wav(api_a, whisper_ready, clip_pcm, kind):
    def heard(container):
        response = transcribe(api_a, encode(clip_pcm, 16000, container), filename=f"voicemail.{container}")
        assert response.status_code == 200, response.content
        return response.json()["text"]

    reference = heard("wav")
    text = heard(kind)
    if kind == "flac":  # lossless: the same samples reach Whisper, so the same words come back
        assert text == reference
    else:  # lossy codecs change the samples a little, not what is said
        assert word_error_rate(reference, text) <= 0.2, (reference, text)


def test_without_a_language_the_tenants_language_applies(api_a, tenant_a, whisper_ready):
    tenant_a.language = "en"
    tenant_a.save(update_fields=["language"])
    body = transcribe(api_a, mp3_of(ENGLISH, voice="en")).json()
    assert body["language"] == "en"
    assert word_error_rate(ENGLISH, body["text"]) <= MAX_WER, body["text"]


@pytest.mark.parametrize("text, voice, detected", [(VOICEMAILS[3], VOICE, "de"), (ENGLISH, "en", "en")])
def test_auto_detects_the_language_and_says_which(api_a, whisper_ready, text, voice, detected):
    body = transcribe(api_a, mp3_of(text, voice=voice), language="auto").json()
    assert body["language"] == detected
    assert word_error_rate(text, body["text"]) <= MAX_WER, body["text"]


def test_the_speech_module_transcribes_german_by_default(key_a, whisper_ready):
    from tests.conftest import make_client

    response = make_client(key_a).generic("POST", "/api/voice/transcribe", mp3_of(VOICEMAILS[2]),
                                          content_type="audio/mpeg")
    assert response.status_code == 200, response.content
    assert response.json()["language"] == "de"
    assert word_error_rate(VOICEMAILS[2], response.json()["text"]) <= MAX_WER


def test_phrases_are_a_hint_for_whisper_not_a_restriction(api_a, whisper_ready):
    # For Vosk these phrases would be the only words it could recognise.
    body = transcribe(api_a, mp3_of(VOICEMAILS[0]), phrases=["ja", "nein", "Schäfer"]).json()
    assert {"guten", "morgen", "mein"} <= set(normalised(body["text"]).split()), body["text"]
    assert word_error_rate(VOICEMAILS[0], body["text"]) <= MAX_SENTENCE_WER, body["text"]


def test_a_recognition_past_its_deadline_is_503_with_retry_after_and_the_next_succeeds(api_a, whisper_ready,
                                                                                      settings):
    audio = mp3_of(VOICEMAILS[3])
    settings.STT_DEADLINE_BASE_SEC, settings.STT_DEADLINE_PER_AUDIO_SEC = 0.0, 0.0
    response = transcribe(api_a, audio)
    assert response.status_code == 503 and int(response["Retry-After"]) > 0
    error = error_of(response)
    assert error["code"] == "stt_busy" and error["details"]["deadlineSec"] == 0
    settings.STT_DEADLINE_BASE_SEC, settings.STT_DEADLINE_PER_AUDIO_SEC = 10.0, 1.0
    # The abandoned transcription did not keep the engine: the next request is served.
    response = transcribe(api_a, audio)
    assert response.status_code == 200 and word_error_rate(VOICEMAILS[3], response.json()["text"]) <= MAX_WER


def test_vosk_checks_the_deadline_too(api_a, korean_model, settings):
    from tests.speech_app.conftest import korean_mp3

    settings.STT_DEADLINE_MAX_SEC = 0.0
    response = transcribe(api_a, korean_mp3("안녕하세요"), language="ko")
    assert response.status_code == 503 and error_of(response)["code"] == "stt_busy"
    assert response["Retry-After"]


def test_the_transcript_carries_the_numbers_heard_on_the_tenants_clock(api_a, tenant_a, whisper_ready):
    response = transcribe(api_a, mp3_of("Bitte rufen Sie mich morgen um vierzehn Uhr zurück."), filename="e.mp3")
    assert response.status_code == 200, response.content
    body = response.json()
    kinds = {entity["type"]: entity["value"] for entity in body["entities"]}
    assert "datetime" in kinds, body
    assert kinds["datetime"].split("T")[1].startswith("14:00:00"), body
