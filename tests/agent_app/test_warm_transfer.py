"""A warm hand-over (issue 37 §5): transfer_call's mode "warm" on the Twilio path,
against the fake REST API on loopback. The person is rung while the caller stays with
the agent; answering, they hear a German summary (who, what, what was done) and enter
the conference the caller joins after it; nobody answering in time (or busy), the ring
is cancelled and the agent says so and offers a callback, which becomes a lead. What
happened is on the call (its actions, the note) for the transcript and the analysis."""
import asyncio
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import pytest
from django.db import connections

from agent_app import phone
from agent_app.mind import Mind
from calls_app.analysis import call_facts
from calls_app.models import Call, WarmTransfer
from calls_app.services import call_callback_create, call_request_web
from console.assistants.models import Assistant
from leads_app.models import Lead
from tests.agent_app.phone import CALLED, CALLER, new_call_sid, signed_post
from tests.agent_app.test_phone_outbound_transfer import _opening_then
from tests.agent_app.test_twilio_call import incoming
from tools_app.services import tool_run

pytestmark = pytest.mark.django_db(transaction=True)
PERSON = "+4930901829"
TARGETS = [{"name": "Zentrale", "e164": PERSON, "warm": True}, {"name": "Labor", "e164": "+4930901821"}]


@pytest.fixture
def line(settings, tenant_a, twilio_carrier, called_number, mock_gateway):
    """A Twilio call in progress, answered by an assistant with a warm target."""
    settings.VOICE_PUBLIC_BASE_URL = "http://testserver"
    settings.VOICE_WARM_TRANSFER_RING_SEC = 20
    Assistant.objects.create(tenant=tenant_a, name="Empfang", transfer_targets=TARGETS,
                             tools=["create_callback", "transfer_call", "end_call"])


def _call(client):
    call_sid = new_call_sid()
    incoming(client, call_sid)
    return Call.objects.select_related("assistant").get(carrier_call_id=call_sid)


def _in_thread(function, **kwargs):
    """`function` in a worker thread (as the conversation runs the model's tools), its
    database connection closed after it."""
    def run():
        try:
            return function(**kwargs)
        finally:
            connections.close_all()

    pool = ThreadPoolExecutor(1)
    future = pool.submit(run)
    pool.shutdown(wait=False)
    return future


def _transfer(call, **arguments):
    return _in_thread(tool_run, assistant=call.assistant, call_id=call.pk, name="transfer_call",
                      arguments={"target": "Zentrale", **arguments})


def _ring(fake_twilio):
    """The REST request that rang the person (the fake's next placed call)."""
    assert fake_twilio.wait_for(1)
    with fake_twilio.lock:
        assert fake_twilio.lock.wait_for(lambda: fake_twilio.dials, 10)
        return fake_twilio.dials[-1]


def _carrier_asks(client, ring, **form):
    """Twilio's request to the ring's Url (the person answered) or, with `event`, its StatusCallback."""
    url = ring["form"]["StatusCallback"] if form.pop("status", False) else ring["form"]["Url"]
    parts = urlsplit(url)
    return signed_post(client, f"{parts.path}?{parts.query}", {"CallSid": ring["sid"], **form}, url=url)


def _actions(call):
    return [{k: v for k, v in action.items() if k != "at"}
            for action in Call.objects.get(pk=call.pk).assistant_actions or []]


def test_the_person_hears_the_summary_then_meets_the_caller(client, line, fake_twilio):
    call = _call(client)
    call_callback_create(call_id=call.pk, reason="Rechnung")  # done before: the summary says so
    future = _transfer(call, reason="Frage zur Rechnung vom März")

    ring = _ring(fake_twilio)
    form = ring["form"]
    assert (form["To"], form["From"], form["Timeout"]) == (PERSON, CALLED, "20")
    assert form["Url"].startswith("http://testserver/voice/twilio/tw1/warm?transfer=")
    assert not future.done()  # the caller waits with the agent while the person is rung

    answer = _carrier_asks(client, ring, CallStatus="in-progress")
    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/xml")
    root = ET.fromstring(answer.content)
    said = root.find("Say").text
    assert said.startswith("Hallo Zentrale, hier ist die Telefonassistenz von ")
    assert "null eins sieben sechs, eins zwei drei vier, fünf sechs sieben acht" in said  # who, in digit groups
    assert "Anliegen: Frage zur Rechnung vom März." in said  # what
    assert "Bereits erledigt: eine Rückrufbitte aufgenommen." in said  # what was done
    room = root.find("Dial/Conference")
    assert (room.text, room.get("startConferenceOnEnter"), room.get("beep")) == (f"stimmwerk-{call.pk}", "true",
                                                                                "false")

    result = future.result(timeout=30)
    assert result == {"ok": True, "tool": "transfer_call", "action": "transfer",
                      "result": {"name": "Zentrale", "e164": PERSON, "mode": "warm"}}
    assert _actions(call)[-1] == {"tool": "transfer_call", "target": "Zentrale", "mode": "warm",
                                  "outcome": "answered"}
    transfer = WarmTransfer.objects.get()
    assert (transfer.status, transfer.summary, transfer.leg_id) == ("answered", "", ring["sid"])  # said once
    # The carrier asking again (a retry) hears no summary a second time.
    again = ET.fromstring(_carrier_asks(client, ring, CallStatus="in-progress").content)
    assert again.find("Hangup") is not None and "nicht mehr in der Leitung" in again.find("Say").text
    assert call_facts(Call.objects.get(pk=call.pk))["transfers"] == ["Zentrale"]


def test_nobody_answering_in_time_gives_the_caller_back_with_a_callback_offer(client, line, fake_twilio, settings):
    settings.VOICE_WARM_TRANSFER_RING_SEC = 1
    call = _call(client)
    began = time.monotonic()
    result = _transfer(call).result(timeout=30)
    assert time.monotonic() - began < 15
    assert (result["ok"], result["error"]) == (False, "transfer_not_answered")
    assert "Rückruf" in result["message"]
    ring = fake_twilio.dials[-1]
    assert {"sid": ring["sid"], "form": {"Status": "canceled"}} in fake_twilio.updates  # the ring is given up
    assert _actions(call) == [{"tool": "transfer_call", "target": "Zentrale", "mode": "warm",
                               "outcome": "not_answered"}]
    facts = call_facts(Call.objects.get(pk=call.pk))
    assert facts["transfers"] == [] and facts["transfers_not_answered"] == ["Zentrale"]
    # The person picking up after all hears that the caller is gone, and nothing of the call.
    late = ET.fromstring(_carrier_asks(client, ring, CallStatus="in-progress").content)
    assert late.find("Hangup") is not None and "Rechnung" not in late.find("Say").text
    assert WarmTransfer.objects.get().summary == ""


def test_a_busy_person_gives_the_caller_back_at_once(client, line, fake_twilio):
    call = _call(client)
    began = time.monotonic()
    future = _transfer(call)
    ring = _ring(fake_twilio)
    assert _carrier_asks(client, ring, status=True, CallStatus="busy").status_code == 204
    assert future.result(timeout=15)["error"] == "transfer_not_answered"
    assert time.monotonic() - began < 15  # not the 20 s of ringing


def test_the_warm_hook_takes_only_the_carriers_signed_requests(client, line, fake_twilio):
    call = _call(client)
    future = _transfer(call)
    ring = _ring(fake_twilio)
    parts = urlsplit(ring["form"]["Url"])
    forged = signed_post(client, f"{parts.path}?{parts.query}", {"CallSid": ring["sid"], "CallStatus": "in-progress"},
                         signature="bm90IGEgc2lnbmF0dXJl")
    assert forged.status_code == 403
    assert WarmTransfer.objects.get().status == "ringing"
    _carrier_asks(client, ring, status=True, CallStatus="no-answer")
    assert future.result(timeout=15)["error"] == "transfer_not_answered"


def test_the_mode_asked_wins_over_the_targets(client, line, fake_twilio):
    call = _call(client)
    assert _transfer(call, mode="cold").result(timeout=15)["result"] == {"name": "Zentrale", "e164": PERSON}
    assert fake_twilio.dials == [] and _actions(call) == [{"tool": "transfer_call", "target": "Zentrale"}]
    future = _in_thread(tool_run, assistant=call.assistant, call_id=call.pk, name="transfer_call",
                        arguments={"target": "Labor", "mode": "warm"})
    assert _ring(fake_twilio)["form"]["To"] == "+4930901821"
    _carrier_asks(client, fake_twilio.dials[-1], status=True, CallStatus="failed")
    assert future.result(timeout=15)["error"] == "transfer_not_answered"


def test_a_line_without_a_warm_hand_over_hands_over_plainly(tenant_a, line, fake_twilio):
    """A web call has no phone line (and an Asterisk dialplan, no adapter): the tool
    gives the plain hand-over, recorded so; nothing is rung."""
    assistant = Assistant.objects.get()
    web = call_request_web(tenant=tenant_a, assistant=assistant)
    result = tool_run(assistant=assistant, call_id=web.pk, name="transfer_call", arguments={"target": "Zentrale"})
    assert result["result"] == {"name": "Zentrale", "e164": PERSON} and fake_twilio.requests == []
    assert _actions(web) == [{"tool": "transfer_call", "target": "Zentrale", "mode": "warm", "outcome": "unsupported"}]


def test_offline_the_agent_says_nobody_answered_and_takes_a_callback(client, line, tenant_a, settings):
    """The offline policy on the mock lane: "mit einem Mitarbeiter sprechen" → the warm
    target is rung → nobody answers → the caller hears so and is offered a callback,
    which they take: a lead for their number."""
    settings.VOICE_WARM_TRANSFER_RING_SEC = 1
    call = _call(client)
    mind = Mind(tenant=tenant_a, call_id=call.pk, language="de", assistant=call.assistant, caller_e164=CALLER,
                channel="Telefon")
    reply = _in_thread(mind.turn, text="Ich möchte bitte mit einem Mitarbeiter sprechen.").result(timeout=60)
    assert "Einen Moment bitte, ich verbinde Sie weiter." in reply.text
    assert "Leider hat gerade niemand abgenommen. Soll ein Mitarbeiter Sie zurückrufen?" in reply.text
    assert not reply.action and "transfer_not_answered" in reply.notes[0]
    assert "Nummer, von der Sie gerade anrufen" in mind.turn("Ja, gerne.").text
    assert "Wann passt Ihnen der Rückruf" in mind.turn("Ja.").text
    mind.turn("Morgen Vormittag.")
    lead = Lead.objects.for_tenant(tenant_a).get()
    assert (lead.kind, lead.phone) == ("callback", CALLER)


@pytest.mark.slow
def test_the_caller_joins_the_conference_over_the_stream(agent_server, client, tenant_a, line, fake_twilio,
                                                         instant_speech):
    """After the person answered, the conversation hands over: the caller's TwiML is the
    conference, which starts only when the person enters after the summary; the call
    is booked handed over, its note saying the summary was given."""
    call_sid = new_call_sid()
    twiml = incoming(client, call_sid)
    call_id = Call.objects.get(carrier_call_id=call_sid).pk

    async def hand_over(stream):
        conversation = phone.live[call_id]
        target = {"name": "Zentrale", "e164": PERSON, "mode": "warm"}
        done = asyncio.run_coroutine_threadsafe(conversation.transfer(target), conversation.loop)
        await asyncio.wrap_future(done)

    asyncio.run(_opening_then(agent_server.port, twiml, call_sid, hand_over))
    update = fake_twilio.updates[-1]
    assert update["sid"] == call_sid
    room = ET.fromstring(update["form"]["Twiml"]).find("Dial/Conference")
    assert (room.text, room.get("startConferenceOnEnter")) == (f"stimmwerk-{call_id}", "false")
    call = Call.objects.with_transcript().get(pk=call_id)
    assert (call.status, call.transferred_to) == ("completed", PERSON)
    assert [e.text for e in call.transcript_entries.all()][-1] == (
        f"Weitergeleitet an Zentrale ({PERSON}) nach Übergabe mit Zusammenfassung")


def test_a_target_is_kept_warm_through_the_api(api_a):
    body = {"name": "Empfang", "tools": ["transfer_call"],
            "transferTargets": [{"name": "Zentrale", "e164": "030 901829", "warm": True},
                                {"name": "Labor", "e164": "030 901821", "warm": False}]}
    response = api_a.post("/v2/assistants", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["transferTargets"] == [{"name": "Zentrale", "e164": PERSON, "warm": True},
                                                  {"name": "Labor", "e164": "+4930901821"}]
    refused = api_a.post("/v2/assistants", {**body, "transferTargets": [{"name": "Z", "e164": PERSON, "warm": "ja"}]},
                         format="json")
    assert refused.status_code == 400 and "transferTargets[0].warm" in refused.json()["error"]["details"]


# --- An Asterisk dialplan's warm hand-over (AudioSocket) ----------------------------------------

@pytest.fixture
def pbx(client, tenant_a, settings):
    """An Asterisk carrier and its dialplan's bearer; the called number's assistant has a warm target."""
    from calls_app.services import carrier_create
    from console.numbers.services import number_create

    _, secret = carrier_create(carrier_id="ast1", kind="asterisk")
    number_create(tenant=tenant_a, e164=CALLED)
    Assistant.objects.create(tenant=tenant_a, name="Empfang", transfer_targets=TARGETS,
                             tools=["create_callback", "transfer_call", "end_call"])
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


def _call_of(*, call_id):
    return Call.objects.select_related("assistant").get(pk=call_id)


def _pbx_call_handed_over(audiosocket, client, pbx):
    """A PBX call whose assistant hands over warm: the tool, then the conversation's
    hand-over (AudioSocket ends); (the call's UUID, the call)."""
    import uuid as uuids

    from tests.agent_app.phone import AudioSocketPeer
    from tests.agent_app.test_audiosocket import register

    call_uuid = uuids.UUID(register(client, pbx["HTTP_AUTHORIZATION"].split()[1]).content.decode())
    assert client.get(f"/voice/asterisk/ast1/calls/{call_uuid}/whisper", **pbx).content == b""  # nothing yet

    async def talk():
        # A call another test of this process left in `live` is not this one.
        before = set(phone.live)
        async with AudioSocketPeer(audiosocket.port) as peer:
            await peer.send(0x01, call_uuid.bytes)
            await peer.audio_until(lambda: len(peer.audio_in()) > 5)
            call_id = next(call_id for call_id in phone.live if call_id not in before)
            conversation = phone.live[call_id]
            call = await asyncio.wrap_future(_in_thread(_call_of, call_id=call_id))
            result = await asyncio.wrap_future(_transfer(call, reason="Befund besprechen"))
            assert result["result"] == {"name": "Zentrale", "e164": PERSON, "mode": "warm"}, result
            done = asyncio.run_coroutine_threadsafe(conversation.transfer(result["result"]), conversation.loop)
            await asyncio.wrap_future(done)
            await asyncio.wait_for(peer.closed.wait(), 30)
            return call

    return call_uuid, asyncio.run(talk())


@pytest.mark.slow
def test_a_pbx_rings_the_person_who_hears_the_summary_over_audiosocket(audiosocket, client, pbx, tenant_a):
    from datetime import timedelta

    from tests.agent_app.phone import AudioSocketPeer
    from tests.agent_app.test_audiosocket import booked_once

    call_uuid, call = _pbx_call_handed_over(audiosocket, client, pbx)
    # The dialplan reads the number and the whisper's UUID back, and dials with U().
    assert client.get(f"/voice/asterisk/ast1/calls/{call_uuid}/transfer", **pbx).content.decode() == PERSON
    whisper = client.get(f"/voice/asterisk/ast1/calls/{call_uuid}/whisper", **pbx).content.decode()
    assert len(whisper) == 36
    assert client.get(f"/voice/asterisk/ast1/calls/{call_uuid}/whisper").status_code == 401

    async def person():
        import uuid as uuids

        async with AudioSocketPeer(audiosocket.port) as peer:
            await peer.send(0x01, uuids.UUID(whisper).bytes)
            await asyncio.wait_for(peer.closed.wait(), 60)
            return peer

    heard = asyncio.run(person())
    assert len(heard.audio_in()) > 50 and heard.frames[-1][1] == 0x00  # the summary (seconds of it), then hangup
    assert WarmTransfer.objects.get().status == "answered"
    outcome = client.post(f"/voice/asterisk/ast1/calls/{call_uuid}/warm", {"status": "ANSWER"}, **pbx)
    assert (outcome.status_code, outcome.content) == (200, b"answered")
    assert _actions(call)[-1] == {"tool": "transfer_call", "target": "Zentrale", "mode": "warm",
                                  "outcome": "answered"}
    ended = Call.objects.with_transcript().get(pk=call.pk)
    assert (ended.status, ended.transferred_to) == ("completed", PERSON)
    assert [e.text for e in ended.transcript_entries.all()][-1].endswith("nach Übergabe mit Zusammenfassung")
    # Booked when the person answered, at the hand-over; the caller's UUID opens nothing again.
    assert ended.ended_at == ended.started_at + timedelta(seconds=ended.seconds)
    assert _connect_again(audiosocket, call_uuid) in ([], [0x00])
    booked_once(tenant_a, Call.objects.get(pk=call.pk))


def _connect_again(audiosocket, call_uuid):
    """The dialplan's AudioSocket() with the call's UUID once more: the frames it got
    before the listener closed (a refused one gets no audio, at most the hangup frame)."""
    from tests.agent_app.phone import AudioSocketPeer

    async def connect():
        async with AudioSocketPeer(audiosocket.port) as peer:
            await peer.send(0x01, call_uuid.bytes)
            await asyncio.wait_for(peer.closed.wait(), 20)
            return [kind for _, kind, _ in peer.frames]

    return asyncio.run(connect())


def _turn(mind, text):
    return _in_thread(mind.turn, text=text)


@pytest.mark.slow
def test_a_pbx_caller_comes_back_to_the_conversation_when_nobody_answers(audiosocket, client, pbx, tenant_a):
    """NOANSWER: the report answers `resume`, the dialplan connects the caller with the
    call's UUID again, and the conversation goes on: the agent says nobody answered and
    offers a callback, which the caller takes (one lead, linked to the call); the call
    is booked once, when the caller hangs up. The UUID opens nothing a third time."""
    from tests.agent_app.phone import AudioSocketPeer
    from tests.agent_app.test_audiosocket import booked_once

    call_uuid, call = _pbx_call_handed_over(audiosocket, client, pbx)
    held = Call.objects.get(pk=call.pk)
    assert (held.ended_at, held.transferred_to) == (None, PERSON)  # held while the dialplan rings, not booked
    assert client.get(f"/voice/asterisk/ast1/calls/{call_uuid}/transfer", **pbx).content.decode() == PERSON
    assert len(client.get(f"/voice/asterisk/ast1/calls/{call_uuid}/whisper", **pbx).content) == 36
    assert _connect_again(audiosocket, call_uuid) in ([], [0x00])  # not before the report

    outcome = client.post(f"/voice/asterisk/ast1/calls/{call_uuid}/warm", {"status": "NOANSWER"}, **pbx)
    assert (outcome.status_code, outcome.content) == (200, b"resume")
    assert Lead.objects.count() == 0  # the caller is asked, not noted for them
    assert [a for a in _actions(call) if a["tool"] == "transfer_call"][-1] == {
        "tool": "transfer_call", "target": "Zentrale", "mode": "warm", "outcome": "not_answered"}
    assert client.post(f"/voice/asterisk/ast1/calls/{call_uuid}/warm", {"status": "NOANSWER"}, **pbx).content == b""

    async def back():
        async with AudioSocketPeer(audiosocket.port) as peer:
            await peer.send(0x01, call_uuid.bytes)
            await peer.audio_until(lambda: getattr(phone.live.get(call.pk), "context", None) is not None
                                   and phone.live[call.pk].context.resumed is not None)
            conversation = phone.live[call.pk]
            # The agent has spoken its reply and it is the caller's turn.
            await peer.audio_until(lambda: conversation.idle_since is not None and peer.audio_in())
            said = conversation.mind.messages[-1]["content"]
            replies = []
            for text in ("Ja bitte.", "Ja.", "Morgen Vormittag."):
                future = _turn(conversation.mind, text)
                await peer.audio_until(future.done)
                replies.append(future.result().text)
            await peer.send(0x00)
            await asyncio.wait_for(peer.closed.wait(), 30)
            return said, replies, conversation.mind.messages

    said, replies, messages = asyncio.run(back())
    assert said == "Leider hat gerade niemand abgenommen. Soll ein Mitarbeiter Sie zurückrufen?"
    assert "Nummer, von der Sie gerade anrufen" in replies[0] and "Wann passt Ihnen der Rückruf" in replies[1]
    # The conversation went on with the call's transcript so far.
    assert any(m["role"] == "assistant" and (m["content"] or "").startswith(tenant_a.disclosure_text.strip())
               for m in messages)
    lead = Lead.objects.for_tenant(tenant_a).get()
    ended = Call.objects.with_transcript().get(pk=call.pk)
    assert (lead.kind, lead.phone, ended.lead_id) == ("callback", CALLER, lead.pk)
    assert (ended.status, ended.transferred_to) == ("completed", "")
    booked_once(tenant_a, ended)
    assert ended.seconds == round((ended.ended_at - ended.started_at).total_seconds())  # up to the real end
    lines = [(e.role, e.text) for e in ended.transcript_entries.all()]
    assert ("system", "Bei Zentrale nahm bei der Übergabe niemand ab: zurück zum Gespräch.") in lines
    assert ("assistant", said) in lines
    # A third connection with the UUID is refused; the call stays booked once.
    assert _connect_again(audiosocket, call_uuid) in ([], [0x00])
    booked_once(tenant_a, Call.objects.get(pk=call.pk))


@pytest.mark.slow
def test_a_pbx_call_that_cannot_come_back_leaves_a_callback_for_the_caller(audiosocket, client, pbx, tenant_a):
    """The held call was booked meanwhile (the orphan sweep: the dialplan took too
    long): the report answers `not_answered`, the callback is noted as a lead here, and
    the dialplan plays its recording; the UUID opens nothing."""
    from datetime import timedelta

    from django.utils import timezone

    from calls_app.services import calls_orphaned_end
    from tests.agent_app.test_audiosocket import booked_once

    call_uuid, call = _pbx_call_handed_over(audiosocket, client, pbx)
    kept = Call.objects.get(pk=call.pk).seconds
    assert calls_orphaned_end(now=timezone.now() + timedelta(seconds=300)) == 1
    swept = Call.objects.get(pk=call.pk)
    assert (swept.status, swept.seconds, swept.transferred_to) == ("completed", kept, PERSON)  # at the hand-over
    assert swept.ended_at == swept.started_at + timedelta(seconds=kept)
    booked_once(tenant_a, swept)

    outcome = client.post(f"/voice/asterisk/ast1/calls/{call_uuid}/warm", {"status": "NOANSWER"}, **pbx)
    assert (outcome.status_code, outcome.content) == (200, b"not_answered")
    lead = Lead.objects.for_tenant(tenant_a).get()
    assert (lead.kind, lead.phone) == ("callback", CALLER) and "niemand nahm ab" in lead.notes
    notes = [e.text for e in Call.objects.with_transcript().get(pk=call.pk).transcript_entries.all()]
    assert notes[-1] == "Bei Zentrale nahm bei der Übergabe niemand ab: Rückruf notiert."
    assert _connect_again(audiosocket, call_uuid) in ([], [0x00])
    assert client.post(f"/voice/asterisk/ast1/calls/{call_uuid}/warm", {"status": "NOANSWER"}, **pbx).content == b""
    assert Lead.objects.count() == 1 and WarmTransfer.objects.get().summary == ""
    booked_once(tenant_a, Call.objects.get(pk=call.pk))


def test_a_ring_nobody_reports_loses_its_summary(client, line, fake_twilio, settings):
    from datetime import timedelta

    from django.utils import timezone

    from calls_app.warm_transfers import warm_transfers_expire

    call = _call(client)
    stale = WarmTransfer.objects.create(call=call, target=PERSON, summary="Anliegen: Rechnung", leg_id="x")
    fresh = WarmTransfer.objects.create(call=call, target=PERSON, summary="Anliegen: Termin", leg_id="y")
    WarmTransfer.objects.filter(pk=stale.pk).update(
        created_at=timezone.now() - timedelta(seconds=settings.AGENT_TOKEN_TTL_SEC + 1))
    assert warm_transfers_expire() == 1
    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert (stale.status, stale.summary) == ("not_answered", "") and fresh.summary == "Anliegen: Termin"


def _held_pbx_call(client, pbx):
    """A PBX call answered (its UUID claimed, as the listener does), whose assistant
    handed over warm: held by call_hand_over while the dialplan rings. (UUID, call id)."""
    from agent_app.services import agent_session_claim
    from calls_app.phone_calls import call_hand_over
    from tests.agent_app.test_audiosocket import register

    call_uuid = register(client, pbx["HTTP_AUTHORIZATION"].split()[1]).content.decode()
    session = agent_session_claim(token=call_uuid, transport="audiosocket")
    call = _call_of(call_id=session.call_id)
    assert _transfer(call).result(timeout=30)["result"]["mode"] == "warm"
    assert call_hand_over(call_id=call.pk, target=PERSON, label=f"Zentrale ({PERSON})") is not None
    return call_uuid, call.pk


def test_a_held_pbx_call_comes_back_once_and_is_booked_once_at_its_end(client, pbx, tenant_a):
    from agent_app.services import agent_session_resume
    from calls_app.services import call_web_end
    from tests.agent_app.test_audiosocket import booked_once

    call_uuid, call_id = _held_pbx_call(client, pbx)
    held = Call.objects.get(pk=call_id)
    assert (held.status, held.ended_at, held.transferred_to) == ("active", None, PERSON)
    assert agent_session_resume(token=call_uuid, transport="audiosocket") is None  # still ringing
    outcome = client.post(f"/voice/asterisk/ast1/calls/{call_uuid}/warm", {"status": "BUSY"}, **pbx)
    assert outcome.content == b"resume" and Lead.objects.count() == 0

    session, resumed = agent_session_resume(token=call_uuid, transport="audiosocket")
    assert (session.call_id, resumed.name) == (call_id, "Zentrale")
    assert resumed.message.startswith("Zentrale hat nicht innerhalb von 20 Sekunden abgenommen.")
    assert agent_session_resume(token=call_uuid, transport="audiosocket") is None  # once
    assert agent_session_resume(token=call_uuid, transport="web") is None
    # The offline policy, given the call's history and the tool's answer, offers the callback.
    mind = Mind(tenant=tenant_a, call_id=call_id, language="de", assistant=_call_of(call_id=call_id).assistant,
                caller_e164=CALLER, channel="Telefon")
    reply = mind.resume(history=resumed.history, tool="transfer_call", result={
        "ok": False, "tool": "transfer_call", "error": "transfer_not_answered", "message": resumed.message})
    assert reply.text == "Leider hat gerade niemand abgenommen. Soll ein Mitarbeiter Sie zurückrufen?"
    assert "Nummer, von der Sie gerade anrufen" in mind.turn("Ja bitte.").text
    mind.turn("Ja.")
    mind.turn("Morgen Vormittag.")
    assert Lead.objects.get().phone == CALLER

    ended = call_web_end(call_id=call_id)
    assert (ended.status, ended.transferred_to, ended.lead_id) == ("completed", "", Lead.objects.get().pk)
    booked_once(tenant_a, ended)
    assert agent_session_resume(token=call_uuid, transport="audiosocket") is None


def test_a_held_pbx_call_whose_person_answers_is_booked_at_the_hand_over(client, pbx, tenant_a):
    from datetime import timedelta

    from agent_app.services import agent_session_resume
    from calls_app.warm_transfers import warm_whisper_claim
    from tests.agent_app.test_audiosocket import booked_once

    call_uuid, call_id = _held_pbx_call(client, pbx)
    kept = Call.objects.get(pk=call_id).seconds
    whisper = client.get(f"/voice/asterisk/ast1/calls/{call_uuid}/whisper", **pbx).content.decode()
    assert warm_whisper_claim(token=whisper).startswith("Hallo Zentrale")
    booked = Call.objects.get(pk=call_id)
    assert (booked.status, booked.seconds, booked.transferred_to) == ("completed", kept, PERSON)
    assert booked.ended_at == booked.started_at + timedelta(seconds=kept)
    booked_once(tenant_a, booked)
    assert client.post(f"/voice/asterisk/ast1/calls/{call_uuid}/warm", {"status": "ANSWER"}, **pbx).content == \
        b"answered"
    assert agent_session_resume(token=call_uuid, transport="audiosocket") is None
    booked_once(tenant_a, Call.objects.get(pk=call_id))
