"""Outbound calls through a twilio carrier's REST API (a fake Twilio on loopback that
records each request), and hand-overs to a person on both paths: a twilio call
redirected to a `<Dial>` over REST, an AudioSocket call ended with the number the
dialplan reads back over the registration endpoint."""
import asyncio
import base64
import time
import uuid

import numpy
import pytest
from websockets.exceptions import ConnectionClosed

from agent_app import phone
from agent_app.audio import WireFormat
from calls_app.models import Call, UsageCounter
from calls_app.services import carrier_create
from tests.agent_app.phone import (
    ACCOUNT,
    CALLED,
    TOKEN,
    AudioSocketPeer,
    MediaStream,
    new_call_sid,
    signed_post,
    stream_of,
    voice_params,
)
from tests.agent_app.test_audiosocket import register
from tests.agent_app.test_twilio_call import incoming, on_test_server

pytestmark = pytest.mark.django_db(transaction=True)
CALLEE = "+4917698765430"
PERSON = "+4930123456"
SILENCE = WireFormat("mulaw", 8000).from_pcm(numpy.zeros(320, dtype="<i2").tobytes(), 16000)


@pytest.fixture
def dialling_out(settings, twilio_carrier, called_number):
    settings.VOICE_OUTBOUND_CARRIER = "tw1"
    settings.VOICE_PUBLIC_BASE_URL = "http://testserver"
    return twilio_carrier


async def _opening_then(port, twiml, call_sid, then):
    """Plays the carrier's side until the opening was spoken, then `then(stream)`."""
    url, token = stream_of(twiml)
    async with MediaStream(on_test_server(url, port), call_sid, token) as stream:
        await stream.start()
        await stream.media_until(SILENCE, lambda: len(stream.of("mark")) >= 2)
        await then(stream)
        await asyncio.wait_for(stream.ws.wait_closed(), 60)
        return stream


async def _stop(stream):
    await stream.send({"event": "stop", "streamSid": stream.stream_sid})


def test_an_outbound_call_is_placed_over_rest_and_served_by_the_same_stream(
        agent_server, api_a, client, tenant_a, dialling_out, fake_twilio, instant_speech):
    response = api_a.post("/voice/v1/calls", {"to": CALLEE}, format="json")
    assert response.status_code == 201, response.content
    call_id, max_seconds = response.json()["id"], response.json()["maxSeconds"]

    assert fake_twilio.wait_for(1)
    request = fake_twilio.requests[0]
    assert request["path"] == f"/2010-04-01/Accounts/{ACCOUNT}/Calls.json"
    assert request["auth"] == "Basic " + base64.b64encode(f"{ACCOUNT}:{TOKEN}".encode()).decode()
    form = request["form"]
    assert (form["To"], form["From"], form["TimeLimit"]) == (CALLEE, CALLED, str(max_seconds))
    assert form["Url"] == f"http://testserver/voice/twilio/tw1/incoming?call={call_id}"
    # The callbacks name our call too: they bind it even when the dial's answer is lost.
    assert form["StatusCallback"] == f"http://testserver/voice/twilio/tw1/status?call={call_id}"
    call = Call.objects.get(pk=call_id)
    sid = call.carrier_call_id
    assert sid.startswith("CA") and call.status == "queued"

    # The callee answers: the carrier fetches the Url, signed over it, and streams.
    answer = signed_post(client, f"/voice/twilio/tw1/incoming?call={call_id}",
                         voice_params(sid, to=CALLEE, caller=CALLED, direction="outbound-api"), url=form["Url"])
    assert answer.status_code == 200
    asyncio.run(_opening_then(agent_server.port, answer.content.decode(), sid, _stop))
    for _ in range(2):  # the status callback, and its retry
        done = signed_post(client, "/voice/twilio/tw1/status",
                           {"CallSid": sid, "CallStatus": "completed", "CallDuration": "17"})
        assert done.status_code == 204
    call.refresh_from_db()
    assert (call.status, call.seconds, call.disclosed, call.direction) == ("completed", 17, True, "outbound")
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert (counter.calls, counter.seconds, counter.reserved_minutes) == (1, 17, 0)


def test_a_refusal_of_the_rest_api_fails_the_call_and_releases_its_minutes(api_a, tenant_a, dialling_out, fake_twilio):
    fake_twilio.fail = (400, {"code": 21211, "message": "The 'To' number is not a valid phone number.",
                              "status": 400})
    response = api_a.post("/voice/v1/calls", {"to": CALLEE}, format="json")
    assert response.status_code == 502 and response.json()["error"]["code"] == "carrier_unavailable"
    call = Call.objects.get()
    assert (call.status, call.seconds) == ("failed", 0)
    assert UsageCounter.objects.get(tenant=tenant_a).reserved_minutes == 0
    assert fake_twilio.requests[0]["form"]["TimeLimit"] == str(call.max_seconds)


def test_a_2xx_answer_without_a_sid_leaves_the_call_to_the_carriers_callbacks(
        api_a, client, tenant_a, dialling_out, fake_twilio):
    """The carrier placed the call but named no sid: the call is not failed (it would
    never be booked); its callbacks, which name our call, bind and end it."""
    fake_twilio.fail = (201, {"status": "queued"})
    response = api_a.post("/voice/v1/calls", {"to": CALLEE}, format="json")
    assert response.status_code == 201, response.content
    call = Call.objects.get(pk=response.json()["id"])
    assert (call.status, call.carrier_call_id) == ("queued", None)
    assert UsageCounter.objects.get(tenant=tenant_a).reserved_minutes == call.max_seconds // 60
    status_url = fake_twilio.requests[0]["form"]["StatusCallback"]
    sid = new_call_sid()
    for status, seconds in (("initiated", None), ("completed", "23")):
        params = {"CallSid": sid, "AccountSid": ACCOUNT, "CallStatus": status,
                  **({"CallDuration": seconds} if seconds else {})}
        path = status_url.removeprefix("http://testserver")
        assert signed_post(client, path, params, url=status_url).status_code == 204
    call.refresh_from_db()
    assert (call.status, call.seconds, call.carrier_call_id) == ("completed", 23, sid)
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert (counter.calls, counter.seconds, counter.reserved_minutes) == (1, 23, 0)


def test_a_request_without_a_key_sent_again_after_a_lost_answer_dials_once(
        api_a, tenant_a, dialling_out, fake_twilio, settings):
    """The grant request is idempotent by default: the same request (tenant, number,
    body) within VOICE_CALL_DEDUP_WINDOW_SEC answers the first call; another number, or
    an Idempotency-Key of the client's own, is a new call."""
    tenant_a.max_call_minutes = 1  # four calls within the cap
    tenant_a.save(update_fields=["max_call_minutes"])
    first = api_a.post("/voice/v1/calls", {"to": CALLEE}, format="json")
    again = api_a.post("/voice/v1/calls", {"to": CALLEE}, format="json")  # the first's answer was lost
    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"] and again["Idempotent-Replayed"] == "true"
    assert len(fake_twilio.requests) == 1 and Call.objects.count() == 1
    other = api_a.post("/voice/v1/calls", {"to": "+4917698765431"}, format="json")
    keyed = api_a.post("/voice/v1/calls", {"to": CALLEE}, format="json", HTTP_IDEMPOTENCY_KEY="mine-1")
    assert len({first.json()["id"], other.json()["id"], keyed.json()["id"]}) == 3
    settings.VOICE_CALL_DEDUP_WINDOW_SEC = 0  # off: each request is a call
    assert api_a.post("/voice/v1/calls", {"to": CALLEE}, format="json").json()["id"] != first.json()["id"]
    assert len(fake_twilio.requests) == 4


def test_the_carrier_adapter_takes_the_campaigns_dial_options(tenant_a, dialling_out, fake_twilio):
    """The seam of calls_app.dialing: answering-machine detection asked for asynchronously
    (its verdict posted to the status webhook), the attempt's key sent along; Twilio does
    not promise one call per key, so a dial without an answer is never sent again."""
    from calls_app.dialing import DialOptions, adapter_of, call_dial
    from calls_app.services import call_request_outbound

    call = call_request_outbound(tenant=tenant_a, carrier=dialling_out, to_e164=CALLEE)
    call_dial(call=call, options=DialOptions(idempotency_key="at_campaign7", machine_detection=True))
    request = fake_twilio.requests[0]
    form = request["form"]
    assert (form["MachineDetection"], form["AsyncAmd"]) == ("DetectMessageEnd", "true")
    assert form["AsyncAmdStatusCallback"] == f"http://testserver/voice/twilio/tw1/status?call={call.pk}"
    assert request["headers"]["I-Twilio-Idempotency-Token"] == "at_campaign7"
    assert not adapter_of(call).capabilities.idempotent_dials


def _dialled(tenant, carrier):
    from calls_app.dialing import DialOptions, call_dial
    from calls_app.services import call_request_outbound

    call = call_request_outbound(tenant=tenant, carrier=carrier, to_e164=CALLEE)
    return call_dial(call=call, options=DialOptions(idempotency_key="at_x", machine_detection=True))


def _verdict(client, call, answered_by):
    return signed_post(client, "/voice/twilio/tw1/status", {"CallSid": call.carrier_call_id, "AccountSid": ACCOUNT,
                                                            "AnsweredBy": answered_by,
                                                            "MachineDetectionDuration": "4200"})


def test_a_person_answering_is_talked_to_and_a_machine_is_hung_up_on(client, tenant_a, dialling_out, fake_twilio):
    tenant_a.max_call_minutes = 2  # two calls within the cap
    tenant_a.save(update_fields=["max_call_minutes"])
    call = _dialled(tenant_a, dialling_out)
    assert _verdict(client, call, "human").status_code == 204
    assert len(fake_twilio.requests) == 1  # nothing asked of the carrier: the conversation goes on
    other = _dialled(tenant_a, dialling_out)
    assert _verdict(client, other, "machine_end_beep").status_code == 204
    request = fake_twilio.requests[-1]
    assert request["path"] == f"/2010-04-01/Accounts/{ACCOUNT}/Calls/{other.carrier_call_id}.json"
    assert "<Hangup" in request["form"]["Twiml"] and "<Say" not in request["form"]["Twiml"]
    assert Call.objects.get(pk=other.pk).ended_at is None  # booked by the status callback that follows


def test_a_machine_gets_the_campaigns_voicemail_after_the_beep(client, tenant_a, dialling_out, fake_twilio,
                                                                monkeypatch):
    from calls_app import dialing

    def leave_a_message(*, call, answered_by):
        return dialing.MachineAnswer(hang_up=False, touchpoint="campaign.voicemail", variables={"firstName": "Anna"})

    monkeypatch.setattr(dialing, "_machine_listeners", [leave_a_message])
    call = _dialled(tenant_a, dialling_out)
    assert _verdict(client, call, "machine_end_beep").status_code == 204
    twiml = fake_twilio.requests[-1]["form"]["Twiml"]
    assert '<Say language="de-DE">' in twiml and "<Hangup" in twiml
    assert tenant_a.disclosure_text.strip()[:20] in twiml  # the disclosure first: the script opens a call
    assert "Guten Tag, Anna." in twiml and "Acme hat versucht" in twiml and CALLED in twiml


# --- Transfer ----------------------------------------------------------------------------------

def test_a_twilio_call_is_handed_over_with_a_dial_over_rest(
        agent_server, client, tenant_a, twilio_carrier, called_number, fake_twilio, instant_speech):
    call_sid = new_call_sid()
    twiml = incoming(client, call_sid)
    call_id = Call.objects.get(carrier_call_id=call_sid).pk

    async def hand_over(stream):
        conversation = phone.live[call_id]
        done = asyncio.run_coroutine_threadsafe(phone.transfer_to(call_id, PERSON), conversation.loop)
        assert await asyncio.wrap_future(done) is True

    asyncio.run(_opening_then(agent_server.port, twiml, call_sid, hand_over))
    request = fake_twilio.requests[-1]
    assert request["path"] == f"/2010-04-01/Accounts/{ACCOUNT}/Calls/{call_sid}.json"
    assert f"<Dial>{PERSON}</Dial>" in request["form"]["Twiml"]
    call = Call.objects.with_transcript().get(pk=call_id)
    assert (call.status, call.transferred_to) == ("completed", PERSON)
    assert [e.text for e in call.transcript_entries.all()][-1] == f"Weitergeleitet an {PERSON}"
    seconds = call.seconds
    # The carrier's duration includes the person's part: the call keeps its seconds up to the hand-over.
    signed_post(client, "/voice/twilio/tw1/status", {"CallSid": call_sid, "CallStatus": "completed",
                                                     "CallDuration": "600"})
    call.refresh_from_db()
    assert call.seconds == seconds
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert (counter.calls, counter.seconds, counter.reserved_minutes) == (1, seconds, 0)


def test_a_refused_hand_over_leaves_the_conversation_going(
        agent_server, client, tenant_a, twilio_carrier, called_number, fake_twilio, instant_speech):
    fake_twilio.fail = (404, {"message": "The requested resource was not found"})
    call_sid = new_call_sid()
    twiml = incoming(client, call_sid)
    call_id = Call.objects.get(carrier_call_id=call_sid).pk

    async def try_then_stop(stream):
        conversation = phone.live[call_id]
        done = asyncio.run_coroutine_threadsafe(phone.transfer_to(call_id, PERSON), conversation.loop)
        assert await asyncio.wrap_future(done) is False
        assert stream.ws.close_code is None
        await _stop(stream)

    asyncio.run(_opening_then(agent_server.port, twiml, call_sid, try_then_stop))
    call = Call.objects.get(pk=call_id)
    assert (call.status, call.transferred_to) == ("completed", "")


def test_an_audiosocket_call_ends_with_the_number_the_dialplan_reads_back(audiosocket, client, tenant_a):
    tenant_a.max_call_minutes = 1
    tenant_a.save(update_fields=["max_call_minutes"])
    _, secret = carrier_create(carrier_id="ast1", kind="asterisk")
    from console.numbers.services import number_create
    number_create(tenant=tenant_a, e164=CALLED)
    call_uuid = uuid.UUID(register(client, secret).content.decode())
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    assert client.get(f"/voice/asterisk/ast1/calls/{call_uuid}/transfer", **bearer).content == b""

    async def call():
        # A call another test of this process left in `live` is not this one.
        before = set(phone.live)
        async with AudioSocketPeer(audiosocket.port) as peer:
            await peer.send(0x01, call_uuid.bytes)
            await peer.audio_until(lambda: len(peer.audio_in()) > 25)  # the opening is being spoken
            call_id = next(call_id for call_id in phone.live if call_id not in before)
            conversation = phone.live[call_id]
            done = asyncio.run_coroutine_threadsafe(phone.transfer_to(call_id, PERSON), conversation.loop)
            assert await asyncio.wrap_future(done) is True
            await asyncio.wait_for(peer.closed.wait(), 30)
            return peer

    began = time.monotonic()
    peer = asyncio.run(call())
    assert peer.frames[-1][1] == 0x00 and time.monotonic() - began < 60  # a hangup frame, then the close
    assert client.get(f"/voice/asterisk/ast1/calls/{call_uuid}/transfer", **bearer).content.decode() == PERSON
    assert client.get(f"/voice/asterisk/ast1/calls/{call_uuid}/transfer").status_code == 401
    call = Call.objects.with_transcript().get()
    assert (call.status, call.transferred_to) == ("completed", PERSON)
    assert [e.text for e in call.transcript_entries.all()][-1] == f"Weitergeleitet an {PERSON}"
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert (counter.calls, counter.seconds, counter.reserved_minutes) == (1, call.seconds, 0)


# --- The grant's end -------------------------------------------------------------------------

def test_at_the_grants_end_the_caller_hears_a_goodbye_and_the_call_is_hung_up(
        agent_server, client, tenant_a, twilio_carrier, called_number, monkeypatch):
    from agent_app.media_stream import MediaStreamConsumer
    from agent_app.session import GOODBYE

    tenant_a.max_call_minutes = 1
    tenant_a.save(update_fields=["max_call_minutes"])
    monkeypatch.setattr(MediaStreamConsumer, "goodbye_lead_sec", 56)  # the goodbye 4 s into the 60 s grant
    call_sid = new_call_sid()
    url, token = stream_of(incoming(client, call_sid))

    async def listen():
        async with MediaStream(on_test_server(url, agent_server.port), call_sid, token) as stream:
            await stream.start()
            try:
                while stream.ws.close_code is None:  # the grant ends the call within 60 s at the latest
                    await stream.media(SILENCE)
            except ConnectionClosed:
                pass
            await stream.ws.wait_closed()
            return stream.ws.close_code

    assert asyncio.run(listen()) == 4402
    call = Call.objects.with_transcript().get(carrier_call_id=call_sid)
    lines = [(entry.role, entry.text) for entry in call.transcript_entries.all()]
    assert lines[-1] == ("assistant", GOODBYE)
    assert call.status == "completed" and call.seconds <= 60
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert (counter.calls, counter.seconds, counter.reserved_minutes) == (1, call.seconds, 0)
