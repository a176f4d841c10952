"""What a session token cannot be used for: unbooked talk by a frame that crashes the
consumer, floods of frames, floods of DTMF notes. Each ends the session with an error
frame and a 4xxx close, and the call is booked once, like any other end."""
import asyncio
import json

import pytest
from websockets.exceptions import ConnectionClosed

from agent_app import consumer
from agent_app import session as core
from calls_app.models import Call, UsageCounter
from tests.agent_app.conftest import Caller, dial, grant, silence

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
NESTED = "[" * 2000 + "]" * 2000  # a RecursionError for json.loads


async def _after_opening(url, *frames, pace=0.0):
    """Waits for the opening to end, sends `frames` (every `pace` seconds, as a client
    streams) and reads until the server closes: (JSON frames received, close code)."""
    async with dial(url) as ws:
        caller = Caller(ws)
        try:
            await caller.until("agent.done")
            for frame in frames:
                await ws.send(frame)
                if pace:
                    await asyncio.sleep(pace)  # pacing of the client's stream
            while True:
                await caller.next()
        except ConnectionClosed:
            pass
        return [f for _, f in caller.frames if isinstance(f, dict)], ws.close_code


def _errors(frames):
    return [frame["code"] for frame in frames if frame["type"] == "error"]


def _booked(tenant, call_id):
    """The call ended `completed`, its seconds and the call counted once, nothing reserved."""
    call = Call.objects.get(pk=call_id)
    counter = UsageCounter.objects.get(tenant=tenant)
    assert (call.status, call.ended_at is not None) == ("completed", True)
    assert (counter.calls, counter.seconds, counter.reserved_minutes) == (1, call.seconds, 0)
    return call


def test_a_deeply_nested_text_frame_is_refused_and_the_call_booked(agent_server, api_a, tenant_a, instant_speech):
    session = grant(api_a, agent_server.port)

    frames, code = asyncio.run(_after_opening(session["url"], NESTED))

    assert code == 4400
    assert _errors(frames) == ["invalid_frame"]
    _booked(tenant_a, session["callId"])


@pytest.mark.parametrize("frame", [
    '{"type": "dtmf", "digit": NaN}',
    json.dumps({"type": "end", "pad": "x" * 5000}),  # over the text frame's size
    '{"type": "dtmf", "digit": "1\\u0000"}',
])
def test_text_frames_go_through_the_one_json_reader(agent_server, api_a, tenant_a, instant_speech, frame):
    session = grant(api_a, agent_server.port)

    frames, code = asyncio.run(_after_opening(session["url"], frame))

    assert (code, _errors(frames)) == (4400, ["invalid_frame"])
    _booked(tenant_a, session["callId"])


def test_an_exception_in_a_frames_handler_ends_the_session_booked(agent_server, api_a, tenant_a, instant_speech,
                                                                   monkeypatch):
    async def broken(self, text):
        raise RuntimeError("a bug in the handler")
    monkeypatch.setattr(consumer.AgentConsumer, "_command", broken)
    session = grant(api_a, agent_server.port)

    frames, code = asyncio.run(_after_opening(session["url"], '{"type": "end"}'))

    assert (code, _errors(frames)) == (4500, ["agent_failed"])
    _booked(tenant_a, session["callId"])


def test_an_exception_right_after_the_token_was_claimed_ends_the_session_booked(agent_server, api_a, tenant_a,
                                                                                monkeypatch):
    def unusable(*args):
        raise RuntimeError("a bug in setting the session up")
    monkeypatch.setattr(consumer, "WireFormat", unusable)
    session = grant(api_a, agent_server.port)

    async def listen():
        async with dial(session["url"]) as ws:
            caller = Caller(ws)
            with pytest.raises(ConnectionClosed):
                while True:
                    await caller.next()
            return [f for _, f in caller.frames if isinstance(f, dict)], ws.close_code

    frames, code = asyncio.run(listen())

    assert (code, _errors(frames)) == (4500, ["agent_failed"])
    _booked(tenant_a, session["callId"])


def test_an_exception_while_the_agent_speaks_ends_the_session_booked(agent_server, api_a, tenant_a, instant_speech,
                                                                      monkeypatch):
    async def database_gone(*, call_id):
        raise RuntimeError("the database went away")
    monkeypatch.setattr(core, "_disclosed", database_gone)
    session = grant(api_a, agent_server.port)

    async def listen():
        async with dial(session["url"]) as ws:
            caller = Caller(ws)
            with pytest.raises(ConnectionClosed):
                while True:
                    await caller.next()
            return [f for _, f in caller.frames if isinstance(f, dict)], ws.close_code

    frames, code = asyncio.run(listen())

    assert (code, _errors(frames)) == (4500, ["agent_failed"])
    assert "agent.done" not in [frame["type"] for frame in frames]
    _booked(tenant_a, session["callId"])


def test_a_booking_that_fails_once_is_tried_again(agent_server, api_a, tenant_a, instant_speech, monkeypatch):
    book, failures = core._end_call, []

    async def fails_once(*, call_id):
        if not failures:
            failures.append(call_id)
            raise RuntimeError("deadlock detected")
        return await book(call_id=call_id)
    monkeypatch.setattr(core, "_end_call", fails_once)
    session = grant(api_a, agent_server.port)

    frames, code = asyncio.run(_after_opening(session["url"], '{"type": "end"}'))

    assert failures == [session["callId"]] and code == 4500
    _booked(tenant_a, session["callId"])


def test_a_flood_of_tiny_audio_frames_is_refused(agent_server, api_a, tenant_a, instant_speech, settings):
    """Two-byte frames pass the audio-seconds limit (each is 62.5 µs of audio); their
    count per second does not."""
    frames, code = asyncio.run(_after_opening(grant(api_a, agent_server.port)["url"], *[b"\0\0"] * 1000))

    assert (code, _errors(frames)) == (4429, ["too_many_frames"])
    assert settings.AGENT_MAX_FRAMES_PER_SEC < 1000


def test_a_flood_of_text_frames_is_refused(agent_server, api_a, tenant_a, instant_speech, settings):
    settings.AGENT_MAX_FRAMES_PER_SEC, settings.AGENT_MAX_DTMF_PER_CALL = 20, 10_000
    session = grant(api_a, agent_server.port)
    dtmf = json.dumps({"type": "dtmf", "digit": "5"})

    frames, code = asyncio.run(_after_opening(session["url"], *[dtmf] * 200))

    assert (code, _errors(frames)) == (4429, ["too_many_frames"])
    call = _booked(tenant_a, session["callId"])
    # The frames within the burst were noted, the flood was not.
    assert 20 <= call.transcript_entries.filter(text="DTMF 5").count() < 200


def test_audio_frames_of_20_ms_in_real_time_are_within_the_limit(agent_server, api_a, tenant_a, instant_speech):
    session = grant(api_a, agent_server.port)
    audio = silence(2.0)
    twenty_ms = [audio[offset:offset + 640] for offset in range(0, len(audio), 640)]  # 100 frames

    frames, code = asyncio.run(_after_opening(session["url"], *twenty_ms, '{"type": "end"}', pace=0.02))

    assert (code, _errors(frames)) == (1000, [])
    _booked(tenant_a, session["callId"])


def test_a_frame_over_the_servers_limit_closes_and_is_booked(agent_server, api_a, tenant_a, instant_speech,
                                                             booked_calls):
    session = grant(api_a, agent_server.port)

    frames, code = asyncio.run(_after_opening(session["url"], b"\0" * 70_000))  # over 64 KiB

    assert code == 1009  # uvicorn's own close: the consumer never sees the frame
    assert booked_calls.wait_for(session["callId"])  # ... but it sees the disconnect
    _booked(tenant_a, session["callId"])


def test_dtmf_notes_are_capped_per_call(agent_server, api_a, tenant_a, instant_speech, settings):
    settings.AGENT_MAX_DTMF_PER_CALL = 3
    session = grant(api_a, agent_server.port)
    keys = [json.dumps({"type": "dtmf", "digit": digit}) for digit in "1234"]

    frames, code = asyncio.run(_after_opening(session["url"], *keys))

    assert (code, _errors(frames)) == (4429, ["too_many_dtmf"])
    call = _booked(tenant_a, session["callId"])
    notes = list(call.transcript_entries.filter(role="system").values_list("text", flat=True))
    assert notes == ["DTMF 1", "DTMF 2", "DTMF 3"]
