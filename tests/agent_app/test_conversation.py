"""A scripted German conversation over the real WebSocket, recorded as a call."""
import asyncio

import pytest

from calls_app.models import Call, UsageCounter
from gateway_app.providers.mock import mock_answer
from tests.agent_app.conftest import Caller, dial, grant, silence, spoken
from tests.speech_app.wer import word_error_rate

SAID = "Ich hätte gerne einen Termin am Montag."


async def _conversation(url, speech):
    async with dial(url) as ws:
        caller = Caller(ws)
        started = await caller.until("session.started")
        opening = await caller.until("agent.speaking")
        await caller.until("agent.done")
        await caller.stream(speech)
        final = await caller.until("transcript.final")
        reply = await caller.until("agent.speaking")
        await caller.until("agent.done")
        # A reply whose next sentence was not ready when its audio began is announced in
        # parts (an agent.speaking as each part's audio begins; likelier on a busy machine):
        # its text is all of them, as the transcript's line is.
        at = next(index for index, (_, frame) in enumerate(caller.frames) if frame is reply)
        reply["text"] = " ".join(frame["text"] for _, frame in caller.frames[at:]
                                 if isinstance(frame, dict) and frame["type"] == "agent.speaking")
        await ws.send('{"type": "end"}')
        await ws.wait_closed()
        return caller, started, opening, final, reply, ws.close_code


@pytest.mark.django_db(transaction=True)
def test_a_spoken_german_conversation_is_heard_answered_and_stored_as_a_call(
        agent_server, api_a, tenant_a, whisper_ready, instant_speech):
    session = grant(api_a, agent_server.port)
    caller, started, opening, final, reply, close_code = asyncio.run(_conversation(session["url"], spoken(SAID) + silence(1.0)))

    assert started == {"type": "session.started", "sessionId": session["sessionId"], "callId": session["callId"]}
    # The disclosure is the first thing the caller hears, then the opening script.
    first_text = next(frame for _, frame in caller.frames if isinstance(frame, dict) and frame["type"] != "session.started")
    assert first_text is opening
    assert opening["text"].startswith(tenant_a.disclosure_text.strip())
    assert "Acme" in opening["text"]
    assert word_error_rate(SAID, final["text"]) <= 0.35, final["text"]
    assert 0 <= final["start"] < final["end"]
    assert reply["text"] == mock_answer(final["text"], language="de")
    reply_at = caller.frames.index(next(item for item in caller.frames if item[1] is reply))
    reply_audio = [frame for _, frame in caller.frames[reply_at:] if isinstance(frame, bytes)]
    assert sum(map(len, reply_audio)) > 16000  # more than half a second of speech
    assert close_code == 1000

    call = Call.objects.with_transcript().get(pk=session["callId"])
    assert (call.direction, call.carrier_id, call.status, call.disclosed) == ("inbound", "web", "completed", True)
    lines = [(entry.role, entry.text) for entry in call.transcript_entries.all()]
    assert lines == [("assistant", opening["text"]), ("user", final["text"]), ("assistant", reply["text"])]
    assert call.seconds >= 1 and call.ended_at is not None
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert (counter.calls, counter.seconds, counter.reserved_minutes) == (1, call.seconds, 0)


@pytest.mark.django_db(transaction=True)
def test_the_call_appears_in_the_call_list(agent_server, api_a, instant_speech):
    session = grant(api_a, agent_server.port)

    async def hang_up():
        async with dial(session["url"]) as ws:
            await Caller(ws).until("agent.done")
            await ws.send('{"type": "end"}')
            await ws.wait_closed()

    asyncio.run(hang_up())
    listed = {call["id"]: call for call in api_a.get("/v2/calls").json()["calls"]}
    assert listed[session["callId"]]["carrier"] == "web"
    assert listed[session["callId"]]["disclosed"] == 1


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_conversations_each_get_their_own_answer(
        agent_server, api_a, tenant_a, instant_speech, whisper_ready):
    """Both callers speak at the same time; each hears the answer to what it said. (How
    their reply latency compares with a lone session's is measured in bench/agent.py.)"""
    tenant_a.max_call_minutes = 2  # two grants within the cap of 10
    tenant_a.save(update_fields=["max_call_minutes"])
    said = {"montag": SAID, "freitag": "Ich komme am Freitag um zehn Uhr zu Ihnen in die Praxis."}
    sessions = {key: grant(api_a, agent_server.port) for key in said}
    audio = {key: spoken(text) + silence(1.0) for key, text in said.items()}

    async def both():
        return await asyncio.gather(*(_conversation(sessions[key]["url"], audio[key]) for key in said))

    results = dict(zip(said, asyncio.run(both()), strict=True))
    for key, (_, started, _, final, reply, close_code) in results.items():
        assert started["callId"] == sessions[key]["callId"] and close_code == 1000
        # Its own words, not the other caller's (which would be far off for both sentences).
        assert word_error_rate(said[key], final["text"]) <= 0.5, final["text"]
        assert reply["text"] == mock_answer(final["text"], language="de")
    assert Call.objects.filter(status="completed", carrier_id="web").count() == 2
