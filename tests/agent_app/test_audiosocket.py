"""Asterisk's path: the dialplan's registration over HTTP (Bearer carrier secret, the
UUID as text), then an AudioSocket client over TCP that streams linear PCM in real
time, hears the agent's paced audio, presses a key and hangs up; strangers, reused
UUIDs and hostile frames are closed at once; every call is booked once."""
import asyncio
import json
import time
import uuid

import numpy
import pytest

from agent_app.audio import WireFormat
from calls_app.models import Call, UsageCounter
from calls_app.services import carrier_create
from console.numbers.services import number_create
from tests.agent_app.conftest import spoken
from tests.agent_app.phone import CALLED, CALLER, AudioSocketPeer
from tests.speech_app.wer import word_error_rate

pytestmark = pytest.mark.django_db(transaction=True)
PCM8K = WireFormat("pcm_s16le", 8000)
ASKED = "Ich komme am Freitag um zehn Uhr zu Ihnen in die Praxis."


@pytest.fixture
def pbx(transactional_db, tenant_a):
    tenant_a.max_call_minutes = 1  # several registrations within the cap of 10
    tenant_a.save(update_fields=["max_call_minutes"])
    _, secret = carrier_create(carrier_id="ast1", kind="asterisk")
    number_create(tenant=tenant_a, e164=CALLED)
    return secret


def register(client, secret, *, json_body=False, **fields):
    body = {"from": CALLER, "to": CALLED, **fields}
    headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    if json_body:
        return client.post("/voice/asterisk/ast1/calls", json.dumps(body), content_type="application/json", **headers)
    return client.post("/voice/asterisk/ast1/calls", body, **headers)  # form-encoded, as CURL() posts


def booked_once(tenant, call):
    counter = UsageCounter.objects.get(tenant=tenant)
    assert call.ended_at is not None
    assert (counter.calls, counter.seconds, counter.reserved_minutes) == (1, call.seconds, 0)


def test_registration_answers_a_uuid_as_text_after_the_number_and_cap_checks(client, pbx, tenant_a):
    response = register(client, pbx)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    assert str(uuid.UUID(response.content.decode())) == response.content.decode()
    call = Call.objects.get()
    assert (call.carrier_id, call.direction, call.status, call.from_e164, call.to_e164) == (
        "ast1", "inbound", "queued", CALLER, CALLED)
    assert register(client, pbx, json_body=True).status_code == 200  # JSON is accepted too

    assert register(client, "wrong").status_code == 401
    unknown = register(client, pbx, to="+4930555000777")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_number"
    assert register(client, pbx, channel="1700000000.42").status_code == 200
    again = register(client, pbx, channel="1700000000.42")
    assert again.status_code == 409 and again.json()["error"]["code"] == "call_exists"

    tenant_a.minute_cap = 0
    tenant_a.save(update_fields=["minute_cap"])
    capped = register(client, pbx)
    assert capped.status_code == 402 and capped.json()["error"]["code"] == "minute_cap_reached"
    assert Call.objects.filter(status="rejected", seconds=0).count() == 1


def test_the_transfer_read_back_answers_only_the_call_s_own_carrier(client, pbx):
    """Another Asterisk carrier's secret, given the UUID of a call not its own, reads
    nothing of it (404, as for a UUID no call has); the call's own carrier reads it."""
    call_uuid = register(client, pbx).content.decode()
    _, other = carrier_create(carrier_id="ast2", kind="asterisk")
    own = client.get(f"/voice/asterisk/ast1/calls/{call_uuid}/transfer", HTTP_AUTHORIZATION=f"Bearer {pbx}")
    assert (own.status_code, own.content) == (200, b"")
    stranger = client.get(f"/voice/asterisk/ast2/calls/{call_uuid}/transfer", HTTP_AUTHORIZATION=f"Bearer {other}")
    assert stranger.status_code == 404 and stranger.json()["error"]["code"] == "not_found"
    unknown = client.get(f"/voice/asterisk/ast1/calls/{uuid.uuid4()}/transfer", HTTP_AUTHORIZATION=f"Bearer {pbx}")
    assert unknown.status_code == 404


async def _refused(port, *frames):
    """Sends the frames and reads until the server closes: (frames in, seconds it took)."""
    began = time.monotonic()
    async with AudioSocketPeer(port) as peer:
        for kind, payload in frames:
            if kind is None:
                peer.writer.write(payload)
                await peer.writer.drain()
            else:
                await peer.send(kind, payload)
        await asyncio.wait_for(peer.closed.wait(), 20)
        return [(kind, payload) for _, kind, payload in peer.frames], time.monotonic() - began


def test_a_stranger_or_garbage_is_closed_at_once(audiosocket, pbx):
    for frames in ([(0x01, uuid.uuid4().bytes)], [(None, b"GET / HTTP/1.1\r\n\r\n")], [(0x10, b"\0" * 320)],
                   [(0x01, b"short")]):
        received, seconds = asyncio.run(_refused(audiosocket.port, *frames))
        assert received in ([], [(0x00, b"")]) and seconds < 5, (frames, received)


def test_a_silent_or_slow_peer_is_closed(audiosocket, pbx, settings):
    settings.PHONE_HANDSHAKE_TIMEOUT_SEC = 0.5
    received, seconds = asyncio.run(_refused(audiosocket.port))  # says nothing at all
    assert seconds < 5
    received, seconds = asyncio.run(_refused(audiosocket.port, (None, b"\x01\x00")))  # a header, cut short
    assert seconds < 5


@pytest.mark.parametrize("hostile", [
    (None, b"\x42\x00\x01x"),  # an unknown kind
    (None, b"\x10\xff\xff" + b"\0" * 65535),  # 64 KiB of audio in one frame
    (None, b"\x10\x00\x03abc"),  # half a sample
    (0x01, None),  # a second UUID
], ids=["unknown kind", "oversized", "odd audio", "second uuid"])
def test_hostile_frames_after_the_uuid_close_and_book_the_call_once(audiosocket, client, pbx, tenant_a, hostile):
    call_uuid = uuid.UUID(register(client, pbx).content.decode())
    kind, payload = hostile
    frames = [(0x01, call_uuid.bytes), (kind, payload if payload is not None else call_uuid.bytes)]
    received, seconds = asyncio.run(_refused(audiosocket.port, *frames))
    assert seconds < 20 and received[-1][0] == 0x00
    booked_once(tenant_a, Call.objects.get())
    # The used UUID opens nothing any more.
    received, _ = asyncio.run(_refused(audiosocket.port, (0x01, call_uuid.bytes)))
    assert all(kind != 0x10 for kind, _ in received)


async def _conversation(port, call_uuid, asked):
    async with AudioSocketPeer(port) as peer:
        await peer.send(0x01, call_uuid.bytes)
        # The opening arrives paced in 20 ms frames; wait until it has been quiet a while.
        await peer.audio_until(lambda: peer.audio_in() and time.monotonic() - peer.audio_in()[-1][0] > 1.0)
        opening = peer.audio_in()
        await peer.audio(asked)
        asked_at = time.monotonic()
        await peer.audio_until(lambda: peer.audio_in(asked_at))
        await peer.send(0x03, b"7")
        await peer.send(0x00)
        await asyncio.wait_for(peer.closed.wait(), 30)
        return opening, asked_at, peer


@pytest.mark.slow
def test_a_pbx_call_is_heard_answered_paced_and_booked_once(audiosocket, client, pbx, tenant_a, whisper_ready):
    call_uuid = uuid.UUID(register(client, pbx).content.decode())
    asked = spoken(ASKED, PCM8K) + PCM8K.from_pcm(numpy.zeros(8000, dtype="<i2").tobytes(), 16000)
    opening, asked_at, peer = asyncio.run(_conversation(audiosocket.port, call_uuid, asked))

    assert all(len(payload) == 320 for _, payload in opening)  # 20 ms frames
    span = opening[-1][0] - opening[0][0]
    assert span >= 0.8 * len(opening) * 0.02 - 0.5  # paced to real time, not sent in a burst
    assert sum(len(payload) for _, payload in opening) >= 16000  # over a second of the opening

    call = Call.objects.with_transcript().get()
    lines = [(entry.role, entry.text) for entry in call.transcript_entries.all()]
    assert lines[0][0] == "assistant" and lines[0][1].startswith(tenant_a.disclosure_text.strip())
    said = [text for role, text in lines if role == "user"]
    # Most words heard: one sentence on the phone band varies widely from one synthesis to
    # the next (test_phone_band.py measures the band over many).
    assert said and word_error_rate(ASKED, said[0]) <= 0.6, said
    assert ("system", "DTMF 7") in lines
    assert (call.status, call.disclosed, call.carrier_id) == ("completed", True, "ast1")
    booked_once(tenant_a, call)
