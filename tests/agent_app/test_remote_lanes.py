"""A conversation over the real WebSocket whose hearing and speaking go to speech
servers (remote lanes of the registry; fakes on loopback that speak the OpenAI audio
API's wire format), and which goes on with this process's engines when they fail."""
import asyncio

import pytest

from gateway_app.providers.mock import mock_answer
from registry_app.models import LaneCooldown
from speech_app.spoken import spoken_form
from tests.agent_app.conftest import grant, silence, spoken
from tests.agent_app.test_conversation import _conversation
from tests.speech_app.speech_server import load, stt_lane, tts_lane

SAID = "Ich hätte gerne einen Termin am Montag."


def reply_audio(caller, reply):
    """The agent's audio after its reply began."""
    reply_at = caller.frames.index(next(item for item in caller.frames if item[1] is reply))
    return b"".join(frame for _, frame in caller.frames[reply_at:] if isinstance(frame, bytes))


@pytest.mark.django_db(transaction=True)
def test_a_conversation_hears_and_speaks_through_speech_servers(agent_server, api_a, instant_speech, speech_server):
    speech = spoken(SAID) + silence(1.0)  # the caller's voice: this process's, before the lanes exist
    hearing, voice = speech_server(text=SAID), speech_server()
    load(stt_lane("stt-whisper-gpu", hearing.url), tts_lane("tts-kokoro-de", voice.url))
    session = grant(api_a, agent_server.port)

    caller, _, _, final, reply, _ = asyncio.run(_conversation(session["url"], speech))
    audio = reply_audio(caller, reply)

    assert final["text"] == SAID  # the server's words, not Whisper base's
    assert reply["text"] == mock_answer(SAID, language="de")
    # Spoken sentence by sentence as the reply came (each one request), after the opening.
    assert " ".join(body["input"] for _, _, body in voice.requests).endswith(spoken_form(reply["text"]))
    assert all(body["voice"] == "de_kerstin" for _, _, body in voice.requests)
    assert len(audio) > 16000
    # The warm-up before the caller's first words loaded this process's model; the server heard only the caller.
    assert all(path == "/v1/audio/transcriptions" for path, _, _ in hearing.requests)
    assert len(hearing.requests) == 1


@pytest.mark.django_db(transaction=True)
def test_the_conversation_goes_on_with_this_processs_voice_when_the_server_fails(
        agent_server, api_a, instant_speech, speech_server):
    speech = spoken(SAID) + silence(1.0)
    hearing, voice = speech_server(text=SAID), speech_server("fail")
    load(stt_lane("stt-whisper-gpu", hearing.url), tts_lane("tts-kokoro-de", voice.url))
    session = grant(api_a, agent_server.port)

    caller, _, _, final, reply, _ = asyncio.run(_conversation(session["url"], speech))
    audio = reply_audio(caller, reply)

    assert final["text"] == SAID and reply["text"] == mock_answer(SAID, language="de")
    assert len(audio) > 16000  # eSpeak NG spoke it
    assert LaneCooldown.objects.filter(lane_id="tts-kokoro-de").exists()
