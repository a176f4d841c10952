"""An assistant spoken by ElevenLabs (`tts-elevenlabs:<voice>`, input streaming) or by
Cartesia (`tts-cartesia-de:<voice>`) against their fakes on loopback
(tests/tts_ws_fakes.py, checked with the vendors' SDKs): a browser session in 16 kHz
PCM, a Twilio phone call in A-law (Cartesia's pcm_alaw as it came, ElevenLabs' μ-law
transcoded), barge-in cancelling at the provider while it still speaks, and a wrong key:
the local voice speaks and the lane's status shows the provider's 401."""
import asyncio
import base64
import threading

import pytest
from django.contrib.auth import get_user_model

from agent_app.audio import WireFormat
from agent_app.speaking import Lines, SpeechItem, _produce
from calls_app.models import Call
from gateway_app.models import LaneUsage
from gateway_app.providers.mock import mock_answer
from registry_app.lanes.config import lane_variable
from tests.agent_app.conftest import grant, silence, spoken
from tests.agent_app.test_conversation import _conversation
from tests.agent_app.test_streaming_voice import SAID, _phone_call
from tests.azure_tts_fake import FakeAzureTts
from tests.speech_app.speech_server import load, stt_lane
from tests.tts_ws_fakes import FakeCartesia, FakeElevenLabs

PROVIDERS = {
    "elevenlabs": ("tts-elevenlabs", "21m00Tcm4TlvDq8ikWAM", FakeElevenLabs),
    "cartesia": ("tts-cartesia-de", "3f4ade23-6eb4-4279-ab05-6a144947c4d5", FakeCartesia),
}


def voiced(settings, provider, fake):
    lane_id, voice, _ = PROVIDERS[provider]
    settings.GATEWAY_LANE_SETTINGS = {lane_variable(lane_id, "KEY"): fake.key,
                                      lane_variable(lane_id, "ENDPOINT"): fake.base_url}
    return f"{lane_id}:{voice}"


def asked_format(provider, connection):
    """(encoding, rate) the provider was asked for."""
    if provider == "elevenlabs":
        return connection.param("output_format")
    output = connection.messages[0]["output_format"]
    return f"{output['encoding']}@{output['sample_rate']}"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("provider, asked, unit", [("elevenlabs", "pcm_16000", b"\x02\x00"),
                                                   ("cartesia", "pcm_s16le@16000", b"\x03\x00")])
def test_a_browser_session_is_spoken_by_the_provider(agent_server, api_a, instant_speech, speech_server, settings,
                                                     provider, asked, unit):
    settings.GATEWAY_MAX_EUR = 0.01
    load(stt_lane("stt-whisper-gpu", speech_server(text=SAID).url))
    lane_id, _, fake_class = PROVIDERS[provider]
    with fake_class(chunks=2, chunk_bytes=1600) as fake:
        voice = voiced(settings, provider, fake)
        assistant = api_a.post("/v2/assistants", {"name": "Empfang", "voice": voice}, format="json").json()
        session = grant(api_a, agent_server.port, assistant=assistant["id"])
        caller, _, opening, final, reply, _ = asyncio.run(_conversation(session["url"], spoken(SAID) + silence(1.0)))
        connections = list(fake.connections)
        assert all(connection.closed.wait(5) for connection in connections)
    assert final["text"] == SAID and mock_answer(SAID, language="de").startswith(reply["text"])
    assert {asked_format(provider, connection) for connection in connections} == {asked}
    sentences = [text for connection in connections for text in connection.texts if text.strip()]
    said = " ".join(sentences)
    assert "Acme" in said and reply["text"].split(".")[0] in said  # the opening and the reply, sentence by sentence
    assert not any(connection.hung_up for connection in connections)
    if provider == "cartesia":  # one connection and one context per agent turn: the opening and the reply
        assert len(connections) == 2 and all(len({m["context_id"] for m in c.messages}) == 1 for c in connections)
    else:
        assert len(connections) == len(sentences)  # ElevenLabs: a connection per sentence
    audio = b"".join(frame for _, frame in caller.frames if isinstance(frame, bytes))
    assert audio == unit * (len(audio) // 2) and len(audio) == 3200 * len(sentences)  # the provider's, all of it
    call = Call.objects.with_transcript().get(pk=session["callId"])
    assert [entry.role for entry in call.transcript_entries.all()] == ["assistant", "user", "assistant"]
    usage = LaneUsage.objects.get(lane_id=lane_id)
    assert (usage.requests, usage.failures) == (len(sentences), 0) and float(usage.eur) > 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("provider, asked", [("elevenlabs", "ulaw_8000"), ("cartesia", "pcm_alaw@8000")])
def test_an_alaw_phone_call_is_spoken_by_the_provider_in_alaw(
        agent_server, client, tenant_a, twilio_carrier, called_number, api_a, speech_server, settings, provider, asked):
    from tests.agent_app.phone import new_call_sid
    from tests.agent_app.test_twilio_call import ASKED, incoming

    settings.GATEWAY_MAX_EUR = 0.01
    load(stt_lane("stt-whisper-gpu", speech_server(text=ASKED).url))
    _, _, fake_class = PROVIDERS[provider]
    with fake_class(chunks=2, chunk_bytes=800) as fake:
        voice = voiced(settings, provider, fake)
        assert api_a.post("/v2/assistants", {"name": "Empfang", "voice": voice}, format="json").status_code == 201
        call_sid = new_call_sid()
        carrier, opening_media = asyncio.run(_phone_call(agent_server.port, incoming(client, call_sid), call_sid,
                                                         "alaw", spoken(ASKED, WireFormat("alaw", 8000))))
        formats = {asked_format(provider, connection) for connection in fake.connections}
    assert formats == {asked}  # ElevenLabs has no A-law: asked for μ-law
    opening = b"".join(base64.b64decode(m["media"]["payload"]) for _, m in carrier.of("media")[:opening_media])
    assert opening and set(opening) == {0xD5}  # A-law silence: Cartesia's bytes as they came, ElevenLabs' transcoded
    call = Call.objects.with_transcript().get(carrier_call_id=call_sid)
    assert ("user", ASKED) in [(entry.role, entry.text) for entry in call.transcript_entries.all()]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("provider", ["elevenlabs", "cartesia"])
def test_barge_in_cancels_at_the_provider_while_it_still_speaks(settings, provider):
    """The conversation's speech thread (agent_app.speaking) with a reply the provider is
    still making: the session's barge-in (`Lines.stop`) reaches the provider at once —
    Cartesia's cancel message, ElevenLabs' stream closed before its final message."""
    load()
    hold = threading.Event()  # the provider makes no more audio until the test ends
    _, _, fake_class = PROVIDERS[provider]
    with fake_class(chunks=3, chunk_bytes=800, hold=hold) as fake:
        voice = voiced(settings, provider, fake)
        loop = asyncio.new_event_loop()
        lines = Lines.of(loop, ["Einen Moment bitte, ich sehe nach."])
        first_audio, items = threading.Event(), []

        def put(item: SpeechItem) -> None:
            items.append(item)
            if isinstance(item, tuple):
                first_audio.set()

        speaking = threading.Thread(target=_produce, args=(lines, put), daemon=True,
                                    kwargs={"opening": False, "language": "de", "voice": voice,
                                            "wire": WireFormat("alaw", 8000)})
        speaking.start()
        assert first_audio.wait(10)
        lines.stop()  # the caller speaks: the session stops the agent's speech
        connection = fake.connections[0]
        assert connection.closed.wait(5)  # while the provider still held its audio back
        hold.set()
        speaking.join(10)
        loop.close()
    if provider == "cartesia":
        assert connection.cancelled == [connection.messages[0]["context_id"]]
    assert connection.hung_up or provider == "cartesia"
    assert [item for item in items if isinstance(item, str)] == []  # no failure noted: a barge-in


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_wrong_key_speaks_with_the_local_voice_and_the_lanes_status_shows_the_401(
        agent_server, api_a, instant_speech, speech_server, settings, client):
    settings.GATEWAY_MAX_EUR = 0.01
    load(stt_lane("stt-whisper-gpu", speech_server(text=SAID).url))
    with FakeAzureTts() as azure:
        settings.GATEWAY_LANE_SETTINGS = {lane_variable("tts-azure-de", "KEY"): "ein-falscher-schluessel",
                                          lane_variable("tts-azure-de", "ENDPOINT"): azure.base_url}
        assistant = api_a.post("/v2/assistants", {"name": "Empfang", "voice": "tts-azure-de:de-DE-KatjaNeural"},
                               format="json").json()
        session = grant(api_a, agent_server.port, assistant=assistant["id"])
        caller, _, _, final, reply, _ = asyncio.run(_conversation(session["url"], spoken(SAID) + silence(1.0)))
    assert azure.requests  # asked, and refused
    audio = b"".join(frame for _, frame in caller.frames if isinstance(frame, bytes))
    assert len(audio) > 32000 and audio != b"\x01\x00" * (len(audio) // 2)  # eSpeak NG spoke
    state = {engine["id"]: engine for engine in client.get("/v2/meta/engines").json()["engines"]}["tts-azure-de"]
    assert state["lastError"]["outcome"] == "rejected" and "401" in state["lastError"]["detail"]
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))
    page = client.get("/admin/registry_app/lane/?q=tts-azure-de").content.decode()
    assert "abgelehnt" in page and "HTTP 401" in page  # the lane's row says why it is not heard
