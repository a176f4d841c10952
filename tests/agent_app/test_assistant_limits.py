"""An assistant's `maxDurationSec`, `silenceTimeoutSec` and `endCallPhrases` apply on
every transport (one conversation core): at the cap the goodbye, then the hang-up, and
the call booked with at most the capped seconds; the caller's silence gets a polite
check, then the end; a reply of the agent's that says an end-call phrase ends the call
after it was spoken."""
import asyncio
import time
import uuid

import pytest
from websockets.exceptions import ConnectionClosed

from agent_app import session as core
from agent_app.mind import Reply
from agent_app.session import GOODBYE, SILENCE_CHECK, SILENCE_END, ends_the_call
from calls_app.models import Call, UsageCounter
from console.assistants.models import Assistant
from tests.agent_app.conftest import Caller, dial, grant, silence, spoken
from tests.agent_app.phone import AudioSocketPeer, MediaStream, new_call_sid, stream_of
from tests.agent_app.test_audiosocket import pbx, register  # noqa: F401 - the fixture, used by name
from tests.agent_app.test_phone_outbound_transfer import SILENCE
from tests.agent_app.test_twilio_call import incoming, on_test_server

pytestmark = pytest.mark.django_db(transaction=True)
CAP = 12


def _booked_capped(tenant, call):
    call.refresh_from_db()
    counter = UsageCounter.objects.get(tenant=tenant)
    assert call.ended_at is not None and call.status == "completed"
    assert call.max_seconds == CAP and call.seconds <= CAP
    assert (counter.calls, counter.seconds, counter.reserved_minutes) == (1, call.seconds, 0)


def _lines(call):
    call = Call.objects.with_transcript().get(pk=call.pk)
    return [(entry.role, entry.text) for entry in call.transcript_entries.all()]


def test_end_call_phrases_match_whole_words_ignoring_case_and_punctuation():
    assert ends_the_call("Vielen Dank. Auf Wiederhören!", ["auf wiederhören"])
    assert ends_the_call("Gern. TSCHÜSS, bis bald", [" Tschüss "])
    assert not ends_the_call("Das Wiederhörensignal ist laut.", ["Wiederhören"])
    assert not ends_the_call("Wie kann ich helfen?", ["Auf Wiederhören", ""])


async def _browser_until_closed(url):
    async with dial(url) as ws:
        caller = Caller(ws)
        try:
            while True:
                await caller.next()
        except ConnectionClosed:
            pass
        return caller, ws.close_code


@pytest.mark.slow
def test_on_the_browser_the_cap_ends_the_call_with_a_goodbye_and_books_the_capped_seconds(
        agent_server, api_a, tenant_a, booked_calls):
    Assistant.objects.create(tenant=tenant_a, name="Kurz", max_duration_sec=CAP)
    session = grant(api_a, agent_server.port)
    began = time.monotonic()
    caller, code = asyncio.run(_browser_until_closed(session["url"]))
    assert code == 1000 and time.monotonic() - began < CAP + 5
    assert caller.texts("agent.speaking")[-1]["text"] == GOODBYE
    assert booked_calls.wait_for(Call.objects.get().pk)
    call = Call.objects.get()
    assert _lines(call)[-1] == ("assistant", GOODBYE)
    _booked_capped(tenant_a, call)


@pytest.mark.slow
def test_on_the_browser_silence_gets_a_polite_check_then_the_end(agent_server, api_a, tenant_a, booked_calls):
    Assistant.objects.create(tenant=tenant_a, name="Geduldig", silence_timeout_sec=2)
    session = grant(api_a, agent_server.port)
    caller, code = asyncio.run(_browser_until_closed(session["url"]))
    said = [frame["text"] for frame in caller.texts("agent.speaking")]
    assert code == 1000
    assert said[-2:] == [SILENCE_CHECK["de"], SILENCE_END["de"]]
    assert booked_calls.wait_for(Call.objects.get().pk)
    assert Call.objects.get().status == "completed"


@pytest.mark.slow
def test_on_the_browser_a_reply_saying_an_end_call_phrase_ends_the_call_after_it(
        agent_server, api_a, tenant_a, booked_calls, monkeypatch, whisper_ready):
    Assistant.objects.create(tenant=tenant_a, name="Knapp", end_call_phrases=["Auf Wiederhören"])
    farewell = "Gern geschehen. Auf Wiederhören!"

    async def think(mind, text, *, say):  # the model's reply (what it says is under test here)
        say(farewell)
        return Reply(text=farewell)
    monkeypatch.setattr(core, "_think", think)
    session = grant(api_a, agent_server.port)
    thanks = spoken("Vielen Dank, das war alles.") + silence(1.5)

    async def talk():
        async with dial(session["url"]) as ws:
            caller = Caller(ws)
            await caller.until("agent.done")  # the opening
            await caller.stream(thanks)
            try:
                while True:
                    await caller.next()
            except ConnectionClosed:
                pass
            return caller, ws.close_code

    caller, code = asyncio.run(talk())
    assert code == 1000
    assert caller.texts("agent.speaking")[-1]["text"] == farewell
    assert caller.texts("agent.interrupted") == []  # spoken in full, then the end
    assert booked_calls.wait_for(Call.objects.get().pk)
    assert _lines(Call.objects.get())[-1] == ("assistant", farewell)


@pytest.mark.slow
def test_on_a_twilio_stream_the_cap_ends_the_call_with_a_goodbye(
        agent_server, client, tenant_a, twilio_carrier, called_number):
    Assistant.objects.create(tenant=tenant_a, name="Kurz", max_duration_sec=CAP)
    call_sid = new_call_sid()
    url, token = stream_of(incoming(client, call_sid))

    async def listen():
        async with MediaStream(on_test_server(url, agent_server.port), call_sid, token) as stream:
            await stream.start()
            try:
                while stream.ws.close_code is None:
                    await stream.media(SILENCE)
            except ConnectionClosed:
                pass
            await stream.ws.wait_closed()
            return stream.ws.close_code

    began = time.monotonic()
    assert asyncio.run(listen()) == 1000 and time.monotonic() - began < CAP + 5
    call = Call.objects.get(carrier_call_id=call_sid)
    assert _lines(call)[-1] == ("assistant", GOODBYE)
    _booked_capped(tenant_a, call)


@pytest.mark.slow
def test_on_audiosocket_the_cap_ends_the_call_with_a_goodbye(audiosocket, client, pbx, tenant_a):  # noqa: F811
    Assistant.objects.create(tenant=tenant_a, name="Kurz", max_duration_sec=CAP)
    call_uuid = uuid.UUID(register(client, pbx).content.decode())

    async def call():
        async with AudioSocketPeer(audiosocket.port) as peer:
            await peer.send(0x01, call_uuid.bytes)
            while not peer.closed.is_set():
                await peer.audio(b"\0" * 320)
            return peer

    began = time.monotonic()
    peer = asyncio.run(call())
    assert peer.frames[-1][1] == 0x00 and time.monotonic() - began < CAP + 5  # a hangup frame, then the close
    call = Call.objects.get()
    assert _lines(call)[-1] == ("assistant", GOODBYE)
    _booked_capped(tenant_a, call)


@pytest.mark.slow
def test_on_a_twilio_stream_silence_gets_a_polite_check_then_the_end(
        agent_server, client, tenant_a, twilio_carrier, called_number):
    """The carrier's media frames of silence keep coming: the caller's silence counts
    from the agent's turn, not from the last frame."""
    Assistant.objects.create(tenant=tenant_a, name="Geduldig", silence_timeout_sec=2)
    call_sid = new_call_sid()
    url, token = stream_of(incoming(client, call_sid))

    async def listen():
        async with MediaStream(on_test_server(url, agent_server.port), call_sid, token) as stream:
            await stream.start()
            try:
                while stream.ws.close_code is None:
                    await stream.media(SILENCE)
            except ConnectionClosed:
                pass
            await stream.ws.wait_closed()
            return stream.ws.close_code

    assert asyncio.run(listen()) == 1000
    call = Call.objects.get(carrier_call_id=call_sid)
    said = [text for role, text in _lines(call) if role == "assistant"]
    assert said[-2:] == [SILENCE_CHECK["de"], SILENCE_END["de"]]
    assert call.status == "completed" and call.ended_at is not None
