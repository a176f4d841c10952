"""The agent speaks while the model streams (issue 28): over the real WebSocket, with a
fake OpenAI-compatible streaming lane on loopback that stops after the first sentence
until the caller has heard it. Synchronised on events (the lane waits for the test), not
on time."""
import asyncio
import threading

import pytest

from calls_app.models import Call
from registry_app import snapshot
from tests.agent_app.conftest import Caller, dial, grant, silence, spoken
from tests.gateway_app.conftest import load_lanes, streaming_lane
from tests.openai_fake import Reply

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FIRST = "Gern helfe ich Ihnen z. B. mit einem Termin."
SECOND = "Unsere Praxis öffnet um acht Uhr."


@pytest.fixture
def live(settings):
    snapshot.invalidate()
    settings.GATEWAY_MODE = "live"
    settings.GATEWAY_MAX_EUR = 0.0
    settings.GATEWAY_LANE_SETTINGS = {}
    # The lane waits for the test: these bound that wait, they do not time anything.
    settings.GATEWAY_FIRST_TOKEN_SEC = settings.AGENT_FIRST_TOKEN_SEC = 30
    settings.GATEWAY_STREAM_IDLE_SEC = 30
    settings.AGENT_THINK_DEADLINE_SEC = 60
    yield
    snapshot.invalidate()


async def _ask(session_url, question):
    """The caller asks; returns the Caller once the reply was spoken (agent.done)."""
    async with dial(session_url) as ws:
        caller = Caller(ws)
        await caller.until("agent.done")  # the opening
        await caller.stream(question)
        await caller.until("transcript.final")
        yield caller
        await ws.send('{"type": "end"}')
        await ws.wait_closed()


def test_the_first_sentence_is_heard_before_the_model_has_finished(agent_server, api_a, live, chat_server,
                                                                   instant_speech, whisper_ready):
    stall = threading.Event()
    words = len(FIRST.split())
    # The role chunk, the first sentence's words and the next word's (which completes the
    # sentence); then the lane stalls until released.
    lane = chat_server(Reply(text=f"{FIRST} {SECOND}", stall_after=1 + words + 1, stall=stall))
    load_lanes(streaming_lane("chat-local", endpoint=lane.url))
    session = grant(api_a, agent_server.port)
    question = spoken("Wann haben Sie geöffnet?") + silence(1.0)

    async def talk():
        async for caller in _ask(session["url"], question):
            first = await caller.until("agent.speaking")
            audio = await caller.next()
            released_after_audio = not stall.is_set()
            stall.set()  # the model goes on
            second = await caller.until("agent.speaking")
            await caller.until("agent.done")
            heard = caller, first, audio, second, released_after_audio
        # Not returned from inside the loop: _ask goes on after its yield, ending the call
        # and waiting for the server to close, by when the call is booked with its lines
        # (the agent writes them without waiting; a read at agent.done could miss the reply's).
        return heard

    caller, first, audio, second, released_after_audio = asyncio.run(talk())
    assert isinstance(audio, bytes) and released_after_audio  # heard while the model was still stalled
    assert first["text"] == FIRST and second["text"] == SECOND
    assert not caller.texts("error")
    latency = caller.texts("turn.latency")[0]
    assert latency["totalMs"] > 0
    lines = list(Call.objects.get(pk=session["callId"]).transcript_entries.values_list("role", "text"))
    # One line for the reply, not one per sentence. (Not necessarily the last line: on a
    # busy machine the end-of-turn model may take a pause inside the question for its
    # end, and the rest of it is heard as a second turn.)
    assert ("assistant", f"{FIRST} {SECOND}") in lines
    assert not {("assistant", FIRST), ("assistant", SECOND)} & set(lines)


def test_a_model_that_says_nothing_soon_gets_the_filler_first(agent_server, api_a, live, chat_server, settings,
                                                             instant_speech, whisper_ready):
    settings.AGENT_FILLER_AFTER_SEC = 0.3
    hold = threading.Event()
    lane = chat_server(Reply(text=SECOND, hold=hold))  # no token until the caller heard the filler
    load_lanes(streaming_lane("chat-local", endpoint=lane.url))
    session = grant(api_a, agent_server.port)
    question = spoken("Wann haben Sie geöffnet?") + silence(1.0)

    async def talk():
        async for caller in _ask(session["url"], question):
            filler = await caller.until("agent.speaking")
            await caller.until("agent.done")
            hold.set()
            answer = await caller.until("agent.speaking")
            await caller.until("agent.done")
            return filler, answer

    filler, answer = asyncio.run(talk())
    assert filler["text"] == "Einen Moment, bitte."
    assert answer["text"] == SECOND
