"""An assistant's vocabulary (its transcriber's `keyterms`) is the local floor's hint too:
Whisper base hears the caller's utterance with the terms as its prompt (issue 36), so a
name it would mishear is written as the assistant knows it. The speech is the pinned
synthesis of tests/speech_app/synthesis.py, so the same samples are heard every run."""
import pytest

from agent_app import conversation
from agent_app.audio import WireFormat
from tests.speech_app.synthesis import synthesised

SAID = "Mein Name ist Yilmaz, ich brauche einen Termin."


def _utterance(text):
    speech = synthesised(text, voice="de+m3")
    return WireFormat("pcm_s16le", 16000).from_pcm(speech.pcm, speech.sample_rate)


@pytest.mark.slow
@pytest.mark.django_db
def test_the_vocabulary_makes_whisper_hear_a_name_it_mishears_without(whisper_ready):
    pcm = _utterance(SAID)
    without = conversation.hear(pcm, language="de")
    assert "Yilmaz" not in without  # Whisper base alone writes another name (here "Irmaß")
    heard = conversation.hear(pcm, language="de", phrases=["Yilmaz", "Praxis Kießling"])
    assert "Yilmaz" in heard and heard.endswith("ich brauche einen Termin.")  # the rest of the utterance is kept
