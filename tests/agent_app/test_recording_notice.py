"""A recorded call says so (§ 201 StGB, Art. 13 GDPR): the disclosure of the conversation
core ends with "Dieses Gespräch wird aufgezeichnet." where the call is recorded, on every
transport, and the call keeps that it was announced; an unrecorded one does not say it."""
import asyncio
import time
import uuid

import numpy
import pytest

from agent_app.audio import WireFormat
from agent_app.conversation import RECORDING_NOTICE, disclosure, opening
from calls_app.models import Call
from calls_app.services import carrier_create
from console.numbers.services import number_create
from tests.agent_app.conftest import Caller, dial, grant
from tests.agent_app.phone import (
    ACCOUNT,
    CALLED,
    AudioSocketPeer,
    MediaStream,
    new_call_sid,
    signed_post,
    stream_of,
    voice_params,
)
from tests.agent_app.test_audiosocket import register

pytestmark = pytest.mark.django_db(transaction=True)
PCM8K = WireFormat("pcm_s16le", 8000)


@pytest.fixture
def recorded(tenant_a, render_cache_dir):
    tenant_a.recording_enabled = True
    tenant_a.max_call_minutes = 1
    tenant_a.save(update_fields=["recording_enabled", "max_call_minutes"])
    return tenant_a


def _opening_line(call):
    first = call.transcript_entries.order_by("ts").first()
    assert first is not None and first.role == "assistant"
    return first.text


def test_the_disclosure_names_the_recording_only_when_the_call_is_recorded(tenant_a):
    assert disclosure(tenant=tenant_a) == tenant_a.disclosure_text.strip()
    assert disclosure(tenant=tenant_a, recorded=True) == f"{tenant_a.disclosure_text.strip()} {RECORDING_NOTICE}"
    said = opening(tenant=tenant_a, variables={}, recorded=True)
    # The notice is part of the disclosure (heard in full before a barge-in), before the greeting.
    assert said.text.startswith(said.disclosure) and said.disclosure.endswith(RECORDING_NOTICE)
    assert RECORDING_NOTICE not in opening(tenant=tenant_a, variables={}).text


@pytest.mark.slow
def test_an_audiosocket_call_that_is_recorded_announces_it(audiosocket, client, recorded):
    number_create(tenant=recorded, e164=CALLED)
    _, secret = carrier_create(carrier_id="ast1", kind="asterisk")
    call_uuid = uuid.UUID(register(client, secret).content.decode())

    async def call():
        async with AudioSocketPeer(audiosocket.port) as peer:
            await peer.send(0x01, call_uuid.bytes)
            await peer.audio(PCM8K.from_pcm(numpy.zeros(16000, dtype="<i2").tobytes(), 16000))
            # The opening arrives paced; it was said once it has been quiet a while.
            await peer.audio_until(lambda: peer.audio_in() and time.monotonic() - peer.audio_in()[-1][0] > 1.0)
            await peer.send(0x00)
            await asyncio.wait_for(peer.closed.wait(), 30)

    asyncio.run(call())
    stored = Call.objects.get()
    assert RECORDING_NOTICE in _opening_line(stored)
    assert (stored.disclosed, stored.recording_enabled, stored.recording_announced) == (True, True, True)


@pytest.mark.slow
@pytest.mark.parametrize("recording", [True, False], ids=["recorded", "not recorded"])
def test_a_twilio_call_announces_its_recording_or_says_nothing_of_it(
        agent_server, client, tenant_a, twilio_carrier, called_number, render_cache_dir, recording):
    tenant_a.recording_enabled = recording
    tenant_a.save(update_fields=["recording_enabled"])
    call_sid = new_call_sid()
    response = signed_post(client, "/voice/twilio/tw1/incoming", voice_params(call_sid))
    url, token = stream_of(response.content.decode())
    silence = WireFormat("mulaw", 8000).from_pcm(numpy.zeros(320, dtype="<i2").tobytes(), 16000)

    async def call():
        stream = f"ws://127.0.0.1:{agent_server.port}/voice/twilio/tw1/stream"
        async with MediaStream(stream, call_sid, token) as carrier:
            await carrier.start()
            # The opening: the disclosure, then the greeting, each part followed by a mark.
            await carrier.media_until(silence, lambda: len(carrier.of("mark")) >= 2)
            await carrier.send({"event": "stop", "streamSid": carrier.stream_sid,
                                "stop": {"accountSid": ACCOUNT, "callSid": call_sid}})
            await carrier.ws.wait_closed()

    assert url.endswith("/voice/twilio/tw1/stream")
    asyncio.run(call())
    stored = Call.objects.get(carrier_call_id=call_sid)
    assert (RECORDING_NOTICE in _opening_line(stored)) is recording
    assert (stored.disclosed, stored.recording_announced) == (True, recording)


@pytest.mark.slow
def test_a_browser_session_is_never_recorded_so_it_announces_no_recording(agent_server, api_a, recorded,
                                                                           instant_speech):
    session = grant(api_a, agent_server.port)

    async def talk():
        async with dial(session["url"]) as ws:
            caller = Caller(ws)
            said = await caller.until("agent.speaking")
            await caller.until("agent.done")
            await ws.send('{"type": "end"}')
            await ws.wait_closed()
            return said

    said = asyncio.run(talk())
    stored = Call.objects.get(pk=session["callId"])
    # The browser's conversation keeps no recording (calls_app: a web call's recording is off),
    # so telling the caller it is recorded would be untrue.
    assert not stored.recording_enabled and RECORDING_NOTICE not in said["text"]
    assert (stored.disclosed, stored.recording_announced) == (True, False)
    assert api_a.get(f"/v2/calls/{stored.pk}").json()["recording_announced"] is False
