"""The idle timeout counts the caller's silence after the agent finished its turn, never
the agent's own speech: with a timeout shorter than the opening, the 4408 comes a whole
timeout after `agent.done`, not earlier."""
import asyncio
import time

import pytest
from websockets.exceptions import ConnectionClosed

from agent_app import consumer
from agent_app import session as core
from calls_app.models import Call
from tests.agent_app.conftest import Caller, dial, grant

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
TIMEOUT = 2


@pytest.fixture
def server_frames(monkeypatch):
    """(monotonic time, frame) of every JSON frame as the server sends it: the server's
    own moments, untouched by how late the client reads them."""
    sent, send = [], consumer.AgentConsumer.send_event

    async def send_and_note(self, frame):
        sent.append((time.monotonic(), frame))
        await send(self, frame)
    monkeypatch.setattr(consumer.AgentConsumer, "send_event", send_and_note)
    return sent


@pytest.fixture
def recogniser_warm(monkeypatch):
    """The recogniser's warm-up after the opening is done at once (not under test)."""
    async def ready(*, language):
        return None
    monkeypatch.setattr(core, "_get_ready", ready)


def _moment(frames, kind, code=None):
    return next(at for at, frame in frames if frame["type"] == kind and frame.get("code", code) == code)


def test_the_idle_timeout_starts_when_the_agent_finished_speaking(agent_server, api_a, settings, server_frames,
                                                                  recogniser_warm, booked_calls):
    settings.AGENT_IDLE_TIMEOUT_SEC = TIMEOUT  # the opening is spoken in real time, longer than this
    session = grant(api_a, agent_server.port)

    async def stay_silent():
        async with dial(session["url"]) as ws:
            caller = Caller(ws)
            with pytest.raises(ConnectionClosed):
                while True:
                    await caller.next()
            return ws.close_code

    assert asyncio.run(stay_silent()) == 4408
    started, done = _moment(server_frames, "session.started"), _moment(server_frames, "agent.done")
    closed = _moment(server_frames, "error", "idle_timeout")
    assert done - started > TIMEOUT  # the agent spoke for longer than the timeout ...
    assert TIMEOUT <= closed - done < TIMEOUT + 5  # ... and the silence counted from its end
    assert booked_calls.wait_for(session["callId"])
    assert Call.objects.get(pk=session["callId"]).status == "completed"


def test_the_recognisers_warm_up_after_the_opening_does_not_put_the_timeout_off(
        agent_server, api_a, settings, server_frames, instant_speech, monkeypatch):
    """The opening is over and it is the caller's turn, even while the recogniser still
    loads (it may take many seconds in a fresh process): silence counts from agent.done."""
    async def still_loading(*, language):
        await asyncio.Event().wait()  # never done: the session's end cancels it
    monkeypatch.setattr(core, "_get_ready", still_loading)
    settings.AGENT_IDLE_TIMEOUT_SEC = TIMEOUT
    session = grant(api_a, agent_server.port)

    async def stay_silent():
        async with dial(session["url"]) as ws:
            caller = Caller(ws)
            with pytest.raises(ConnectionClosed):
                while True:
                    await caller.next()
            return ws.close_code

    assert asyncio.run(stay_silent()) == 4408
    closed, done = _moment(server_frames, "error", "idle_timeout"), _moment(server_frames, "agent.done")
    assert TIMEOUT <= closed - done < TIMEOUT + 5


def test_frames_of_the_caller_after_the_agents_turn_put_the_timeout_off(agent_server, api_a, settings,
                                                                        server_frames, instant_speech,
                                                                        recogniser_warm):
    settings.AGENT_IDLE_TIMEOUT_SEC = TIMEOUT
    session = grant(api_a, agent_server.port)

    async def press_then_stay_silent():
        async with dial(session["url"]) as ws:
            caller = Caller(ws)
            await caller.until("agent.done")
            await asyncio.sleep(TIMEOUT / 2)  # the caller's pause before pressing a key
            await ws.send('{"type": "dtmf", "digit": "1"}')
            pressed = time.monotonic()
            with pytest.raises(ConnectionClosed):
                while True:
                    await caller.next()
            return pressed, ws.close_code

    pressed, code = asyncio.run(press_then_stay_silent())
    assert code == 4408
    assert _moment(server_frames, "error", "idle_timeout") - pressed >= TIMEOUT - 0.05
