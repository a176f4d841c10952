"""The Media Streams WebSocket against a carrier that misbehaves: tokens of another
call, used or expired; messages before the start; malformed, oversized or unknown
messages; base64 that is not audio of the announced size; another streamSid; audio
faster than real time; a connection that never starts. Each gets a close and an error
log line, never a stuck task, and a call that had begun is booked exactly once."""
import asyncio
import base64
import json
import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from agent_app.models import AgentSession
from calls_app.models import Call, UsageCounter
from tests.agent_app.phone import MediaStream, new_call_sid, signed_post, stream_of
from tests.agent_app.test_twilio_call import incoming, on_test_server

pytestmark = pytest.mark.django_db(transaction=True)


async def _closed(url, call_sid, token, *messages, start=True, start_kwargs=None):
    """Starts the stream (if asked), sends `messages` (dicts, or raw text), and waits
    for the server's close: its close code."""
    async with MediaStream(url, call_sid, token) as stream:
        if start:
            await stream.start(**(start_kwargs or {}))
        for message in messages:
            if isinstance(message, str):
                await stream.ws.send(message)
            else:
                message = dict(message)
                message.setdefault("streamSid", stream.stream_sid)
                await stream.send(message)
        await asyncio.wait_for(stream.ws.wait_closed(), 30)
        return stream.ws.close_code


def _booked_once(tenant, call):
    call.refresh_from_db()
    counter = UsageCounter.objects.get(tenant=tenant)
    assert call.ended_at is not None
    assert (counter.calls, counter.seconds, counter.reserved_minutes) == (1, call.seconds, 0)


def _stream(client, port):
    call_sid = new_call_sid()
    url, token = stream_of(incoming(client, call_sid))
    return on_test_server(url, port), call_sid, token, Call.objects.get(carrier_call_id=call_sid)


def _media(payload):
    return {"event": "media", "media": {"track": "inbound", "payload": payload}}


@pytest.mark.parametrize("messages", [
    ["not json"],
    ['{"event": 1}'],
    ["[1, 2]"],
    [json.dumps({"event": "media", "media": {"payload": "AAAA" * 3000}})],  # over 8 KiB
    [{"event": "sing"}],
    [_media("***not base64***")],
    [_media("")],
    [_media(base64.b64encode(b"\xff" * 1700).decode())],  # over 200 ms of 8 kHz audio
    [{"event": "media", "streamSid": "MZ-someone-else", "media": {"payload": "//8="}}],
    [{"event": "start", "start": {}}],  # a second start
    [_media(base64.b64encode(b"\xff" * 160).decode())] * 120,  # 2.4 s of audio at once
], ids=["text", "event not a string", "not an object", "oversized", "unknown event", "bad base64", "empty",
        "too long", "other streamSid", "second start", "faster than real time"])
def test_a_broken_message_closes_the_stream_and_books_once(agent_server, client, tenant_a, twilio_carrier,
                                                          called_number, caplog, messages):
    caplog.set_level(logging.INFO)
    url, call_sid, token, call = _stream(client, agent_server.port)
    code = asyncio.run(_closed(url, call_sid, token, *messages))
    assert code >= 4000
    _booked_once(tenant_a, call)
    assert any(record.levelno >= logging.INFO and record.name.startswith("agent_app") for record in caplog.records)


def test_a_token_of_another_call_opens_nothing_and_books_nothing(agent_server, client, tenant_a, twilio_carrier,
                                                                 called_number):
    url, call_sid, token, call = _stream(client, agent_server.port)
    other_sid = new_call_sid()
    assert asyncio.run(_closed(url, other_sid, token, start_kwargs={"call_sid": other_sid})) == 4401
    call.refresh_from_db()
    assert (call.status, call.ended_at) == ("queued", None)
    # The call's own stream still opens with it.
    assert asyncio.run(_closed(url, call_sid, token, {"event": "stop"})) == 1000
    _booked_once(tenant_a, call)
    assert asyncio.run(_closed(url, call_sid, token)) == 4401  # used


def test_an_expired_token_is_refused_and_its_call_ends_unbilled(agent_server, client, tenant_a, twilio_carrier,
                                                               called_number):
    url, call_sid, token, call = _stream(client, agent_server.port)
    AgentSession.objects.filter(call=call).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert asyncio.run(_closed(url, call_sid, token)) == 4401
    call.refresh_from_db()
    assert (call.status, call.seconds) == ("canceled", 0)
    assert UsageCounter.objects.get(tenant=tenant_a).reserved_minutes == 0


def test_a_token_of_a_call_the_carrier_ended_is_refused_before_anything_is_spoken(
        agent_server, client, tenant_a, twilio_carrier, called_number):
    url, call_sid, token, call = _stream(client, agent_server.port)
    ended = signed_post(client, "/voice/twilio/tw1/status", {"CallSid": call_sid, "CallStatus": "completed",
                                                             "CallDuration": "0"})
    assert ended.status_code == 204

    async def refused():
        async with MediaStream(url, call_sid, token) as stream:
            await stream.start()
            await asyncio.wait_for(stream.ws.wait_closed(), 30)
            return stream

    stream = asyncio.run(refused())
    assert stream.ws.close_code == 4401 and stream.of("media") == []
    call.refresh_from_db()
    assert (call.status, call.seconds, call.started_at) == ("completed", 0, None)  # as the carrier said
    assert AgentSession.objects.get(call=call).used_at is None
    assert UsageCounter.objects.get(tenant=tenant_a).reserved_minutes == 0


@pytest.mark.parametrize("case", ["media before start", "never starts", "unknown encoding"])
def test_a_stream_that_does_not_start_properly_is_closed(agent_server, client, tenant_a, twilio_carrier,
                                                        called_number, settings, case):
    settings.PHONE_HANDSHAKE_TIMEOUT_SEC = 0.5
    url, call_sid, token, call = _stream(client, agent_server.port)
    if case == "media before start":
        code = asyncio.run(_closed(url, call_sid, token, _media("//8="), start=False))
    elif case == "never starts":
        code = asyncio.run(_closed(url, call_sid, token, start=False))
    else:
        code = asyncio.run(_closed(url, call_sid, token, start_kwargs={"encoding": "audio/l16"}))
    assert code == 4400
    call.refresh_from_db()
    assert call.status == "queued"  # its token is still good for the real stream
