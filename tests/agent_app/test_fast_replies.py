"""What makes the first reply come quickly, as behaviour over the real WebSocket (the
figures are bench/bench_agent.py's): the first sentence is sent before the second is
synthesised, the opening is synthesised once per script, a partial transcript arrives
while the caller is still speaking, two sessions recognise at the same time, and each
reply measures itself (turn.latency, stored with the call)."""
import asyncio
import threading
import time

import pytest

from agent_app import conversation
from calls_app.models import TurnLatency
from speech_app.whisper import WhisperRecognizer
from tests.agent_app.conftest import Caller, dial, grant, silence, spoken

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LONG_SENTENCE = "Bitte rufen Sie mich zurück, meine Nummer ist null eins fünf zwei, drei drei vier vier fünf."
SAID = "Ich hätte gerne einen Termin am Montag."


@pytest.fixture(autouse=True)
def no_cached_openings(monkeypatch):
    monkeypatch.setattr(conversation, "_openings", type(conversation._openings)())


class Gated:
    """A synthesis engine that notes every sentence it makes and makes the second one
    only once the caller has received audio (`heard`; it gives up after `patience`
    seconds)."""

    def __init__(self, engine, heard, patience=60):
        self.engine, self.heard, self.patience = engine, heard, patience
        self.events = []  # "made" / "gave up"
        self.texts = []  # the texts it was asked to stream

    def __getattr__(self, name):
        return getattr(self.engine, name)

    def stream(self, text, *, voice):
        self.texts.append(text)
        for speech in self.engine.stream(text, voice=voice):
            if self.events and not self.heard.wait(self.patience):
                self.events.append("gave up")
                raise RuntimeError("the second sentence was wanted before the first one was sent")
            self.events.append("made")
            yield speech


class Synthesis:
    """The agent's synthesis engine, gated (made on the agent's first use of it)."""

    def __init__(self):
        self.heard = threading.Event()
        self.engine = None


@pytest.fixture
def synthesis(monkeypatch):
    real, seen = conversation.synthesizer_for, Synthesis()

    def synthesizer_for(language, voice=None):
        if seen.engine is None:
            seen.engine = Gated(real(language, voice=voice), seen.heard)
        return seen.engine

    monkeypatch.setattr(conversation, "synthesizer_for", synthesizer_for)
    return seen


def test_the_first_sentence_is_sent_before_the_second_is_synthesised(agent_server, api_a, instant_speech,
                                                                     synthesis):
    session = grant(api_a, agent_server.port)

    async def listen():
        async with dial(session["url"]) as ws:
            caller = Caller(ws)
            await caller.until("agent.speaking")
            while not isinstance(await caller.next(), bytes):
                pass
            synthesis.heard.set()  # the first sentence's audio arrived
            await caller.until("agent.done")
            await ws.send('{"type": "end"}')
            return caller

    caller = asyncio.run(listen())
    engine = synthesis.engine
    assert "gave up" not in engine.events
    assert engine.events.count("made") >= 2  # the opening has more than one sentence
    assert not caller.texts("error")


def test_the_opening_is_synthesised_once_per_script(agent_server, api_a, tenant_a, instant_speech, synthesis):
    synthesis.heard.set()  # not gated here: counted
    tenant_a.max_call_minutes = 2
    tenant_a.save(update_fields=["max_call_minutes"])

    def hear_the_opening():
        session = grant(api_a, agent_server.port)

        async def listen():
            async with dial(session["url"]) as ws:
                caller = Caller(ws)
                await caller.until("agent.done")
                await ws.send('{"type": "end"}')
                return sum(len(frame) for _, frame in caller.frames if isinstance(frame, bytes))
        return asyncio.run(listen())

    first = hear_the_opening()
    made = len(synthesis.engine.texts)
    assert made >= 1
    assert hear_the_opening() == first  # the same audio ...
    assert len(synthesis.engine.texts) == made  # ... not synthesised again
    response = api_a.put("/v2/audio/scripts/inbound.greeting", {"text": "Willkommen bei {{companyName}}. "
                                                                        "Was kann ich für Sie tun?"}, format="json")
    assert response.status_code == 200, response.content
    hear_the_opening()
    assert len(synthesis.engine.texts) > made  # a new version of the script is synthesised anew


def test_a_partial_transcript_arrives_before_the_utterance_ends(agent_server, api_a, instant_speech, whisper_ready):
    session = grant(api_a, agent_server.port)
    speech = spoken(LONG_SENTENCE)

    async def talk():
        async with dial(session["url"]) as ws:
            caller = Caller(ws)
            await caller.until("agent.done")
            listening = asyncio.create_task(caller.until("transcript.final"))
            speech_sent = await caller.stream(speech)
            await caller.stream(silence(1.0))
            final = await listening
            await ws.send('{"type": "end"}')
            return caller, speech_sent, final

    caller, speech_sent, final = asyncio.run(talk())
    partials = [(at, frame) for at, frame in caller.frames if isinstance(frame, dict)
                and frame["type"] == "transcript.partial"]
    assert partials, [frame for _, frame in caller.frames if isinstance(frame, dict)]
    assert partials[0][0] < speech_sent  # received while the caller was still speaking
    assert all(frame["text"] and frame["start"] == final["start"] for _, frame in partials)


def test_two_sessions_recognise_at_the_same_time(agent_server, api_a, tenant_a, instant_speech, whisper_ready,
                                                 settings, monkeypatch):
    if settings.WHISPER_ENGINES < 2:
        pytest.skip("one core: one recognition engine, by design")
    together, inside = threading.Condition(), []
    most = []
    run = WhisperRecognizer._run_utterance

    def counted(self, job):
        if job.draft:
            return run(self, job)
        with together:
            inside.append(job)
            most.append(len(inside))
            together.notify_all()
            together.wait_for(lambda: len(inside) >= 2, timeout=30)  # the other session's, if it runs too
        try:
            return run(self, job)
        finally:
            with together:
                inside.remove(job)

    monkeypatch.setattr(WhisperRecognizer, "_run_utterance", counted)
    tenant_a.max_call_minutes = 2
    tenant_a.save(update_fields=["max_call_minutes"])
    sessions = [grant(api_a, agent_server.port) for _ in range(2)]
    speech = spoken(SAID) + silence(1.0)

    async def one(session):
        async with dial(session["url"]) as ws:
            caller = Caller(ws)
            await caller.until("agent.done")
            await caller.stream(speech)
            final = await caller.until("transcript.final")
            await ws.send('{"type": "end"}')
            return final

    async def both():
        return await asyncio.gather(*(one(session) for session in sessions))

    finals = asyncio.run(both())
    assert all(final["text"] for final in finals)
    assert max(most) >= 2  # one session's recognition ran while the other's did


def test_each_reply_measures_itself_and_the_call_keeps_it(agent_server, api_a, instant_speech, whisper_ready):
    session = grant(api_a, agent_server.port)
    speech = spoken(SAID) + silence(1.0)

    async def talk():
        async with dial(session["url"]) as ws:
            caller = Caller(ws)
            await caller.until("agent.done")
            await caller.stream(speech)
            await caller.until("agent.speaking")
            latency = await caller.until("turn.latency")
            await caller.until("agent.done")
            await ws.send('{"type": "end"}')
            await ws.wait_closed()
            return caller, latency

    began = time.monotonic()
    caller, latency = asyncio.run(talk())
    stages = ("endOfTurnMs", "recognitionMs", "thinkingMs", "synthesisMs")
    assert set(latency) == {"type", "totalMs", *stages}
    assert abs(sum(latency[stage] for stage in stages) - latency["totalMs"]) <= len(stages)  # rounding
    assert 0 < latency["totalMs"] < (time.monotonic() - began) * 1000
    # The event follows the reply's first audio.
    kinds = [frame if isinstance(frame, bytes) else frame["type"] for _, frame in caller.frames]
    speaking = len(kinds) - 1 - kinds[::-1].index("agent.speaking")
    assert isinstance(kinds[speaking + 1], bytes) and "turn.latency" in kinds[speaking + 1:]

    stored = TurnLatency.objects.get(call_id=session["callId"])
    assert stored.total_ms == latency["totalMs"] and stored.recognition_ms == latency["recognitionMs"]
    summary = api_a.get(f"/v2/calls/{session['callId']}").json()["latency"]
    assert summary["turns"] == 1 and summary["p50_ms"] == summary["max_ms"] == latency["totalMs"]
    assert summary["median_ms"]["end_of_turn"] == latency["endOfTurnMs"]
