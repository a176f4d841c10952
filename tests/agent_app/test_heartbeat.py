"""The agent's session owns its call: it writes the call's heartbeat while it lives, and
a session whose call the sweep ended (taken for orphaned) is closed (issue 31, finding 6).
The kill -9 of a real server is in test_server_killed.py."""
import asyncio
import threading
from datetime import timedelta

import pytest
from django.utils import timezone
from websockets.exceptions import ConnectionClosed

from calls_app.models import Call, UsageCounter
from calls_app.services import calls_orphaned_end
from tests.agent_app.conftest import RECEIVE_TIMEOUT, Caller, dial, grant

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


class Beats:
    """How many heartbeats the consumer has written, told as each one returns."""

    def __init__(self):
        self.count = 0
        self._changed = threading.Condition()

    def add(self):
        with self._changed:
            self.count += 1
            self._changed.notify_all()

    def wait_for(self, count):
        with self._changed:
            return self._changed.wait_for(lambda: self.count >= count, RECEIVE_TIMEOUT)


@pytest.fixture
def beats(monkeypatch, settings):
    from agent_app import session

    settings.CALL_HEARTBEAT_SEC = 0.2
    told, beat = Beats(), session._heartbeat

    async def beat_and_tell(*, call_id):
        try:
            return await beat(call_id=call_id)
        finally:
            told.add()

    monkeypatch.setattr(session, "_heartbeat", beat_and_tell)
    return told


def test_a_live_session_writes_its_calls_heartbeat_and_the_sweep_leaves_it(agent_server, api_a, instant_speech,
                                                                            beats):
    session = grant(api_a, agent_server.port)

    async def talk():
        async with dial(session["url"]) as ws:
            await Caller(ws).until("agent.done")  # the opening read: nothing left unread
            assert await asyncio.to_thread(beats.wait_for, 2)
            call = await asyncio.to_thread(Call.objects.get, pk=session["callId"])
            assert call.heartbeat_at > call.started_at
            assert await asyncio.to_thread(calls_orphaned_end) == 0
            await ws.send('{"type": "end"}')
            await ws.wait_closed()
            return ws.close_code

    assert asyncio.run(talk()) == 1000
    call = Call.objects.get(pk=session["callId"])
    assert call.status == Call.Status.COMPLETED


def test_a_session_whose_call_the_sweep_ended_is_closed_and_booked_once(agent_server, api_a, tenant_a,
                                                                        instant_speech, beats, settings):
    session = grant(api_a, agent_server.port)

    async def talk():
        async with dial(session["url"]) as ws:
            caller = Caller(ws)
            await caller.until("agent.done")
            assert await asyncio.to_thread(beats.wait_for, 1)
            # The owner looks dead to a sweep that runs later than its timeout.
            later = timezone.now() + timedelta(seconds=settings.CALL_HEARTBEAT_TIMEOUT_SEC + 60)
            assert await asyncio.to_thread(calls_orphaned_end, now=later) == 1
            try:
                while True:
                    await caller.next()
            except ConnectionClosed:
                pass
            return caller.texts("error"), ws.close_code

    errors, code = asyncio.run(talk())
    assert code == 4500 and [error["code"] for error in errors] == ["agent_failed"]
    call = Call.objects.get(pk=session["callId"])
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert call.is_ended and (counter.calls, counter.seconds, counter.reserved_minutes) == (1, call.seconds, 0)
