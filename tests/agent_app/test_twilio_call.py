"""Whole inbound phone calls through a Twilio-compatible carrier: the voice webhook
signed by Twilio's own RequestValidator, its TwiML parsed, the Media Streams WebSocket
played by a websockets client in real time with German speech of our own synthesis,
in μ-law and in A-law; then the call as stored and booked, and the status callbacks."""
import asyncio
import base64
import time
import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

import numpy
import pytest
from twilio.request_validator import RequestValidator

from agent_app.audio import WireFormat
from agent_app.session import INTERRUPTED
from calls_app.models import Call, CarrierEvent, UsageCounter
from tests.agent_app.conftest import spoken
from tests.agent_app.phone import (
    ACCOUNT,
    CALLED,
    CALLER,
    TOKEN,
    MediaStream,
    new_call_sid,
    signed_post,
    stream_of,
    voice_params,
)
from tests.speech_app.wer import word_error_rate

pytestmark = pytest.mark.django_db(transaction=True)
# Heard through 8 kHz G.711 at low word error rates (tests/agent_app/test_stream.py).
ASKED = "Ich komme am Freitag um zehn Uhr zu Ihnen in die Praxis."


def incoming(client, call_sid, **params):
    response = signed_post(client, "/voice/twilio/tw1/incoming", voice_params(call_sid, **params))
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/xml")
    return response.content.decode()


def on_test_server(url, port):
    return f"ws://127.0.0.1:{port}{urlsplit(url).path}"


async def _call(port, twiml, call_sid, law, asked, barge_in):
    url, token = stream_of(twiml)
    wire = WireFormat(law, 8000)
    silence = wire.from_pcm(numpy.zeros(320, dtype="<i2").tobytes(), 16000)  # 20 ms
    async with MediaStream(on_test_server(url, port), call_sid, token, law) as carrier:
        await carrier.start()
        # The opening (the disclosure, then the greeting), each part followed by a mark.
        await carrier.media_until(silence, lambda: len(carrier.of("mark")) >= 2)
        await carrier.media(asked)
        asked_at = time.monotonic()
        await carrier.media_until(silence, lambda: any(at > asked_at for at, _ in carrier.of("media")))
        # Barge-in: the caller speaks over the reply.
        await carrier.media(barge_in)
        await carrier.media_until(silence, lambda: carrier.of("clear"))
        await carrier.send({"event": "dtmf", "streamSid": carrier.stream_sid,
                            "dtmf": {"track": "inbound_track", "digit": "1"}})
        await carrier.send({"event": "stop", "streamSid": carrier.stream_sid,
                            "stop": {"accountSid": ACCOUNT, "callSid": call_sid}})
        await carrier.ws.wait_closed()
        return carrier, asked_at


@pytest.mark.slow
@pytest.mark.parametrize("law", ["mulaw", "alaw"])
def test_a_whole_inbound_call_is_answered_heard_and_booked_once(
        agent_server, client, tenant_a, twilio_carrier, called_number, whisper_ready, law):
    call_sid = new_call_sid()
    twiml = incoming(client, call_sid)
    stream_url, token = stream_of(twiml)
    assert stream_url.endswith("/voice/twilio/tw1/stream") and len(token) >= 40

    wire = WireFormat(law, 8000)
    speech = spoken(ASKED, wire), spoken(ASKED, wire)  # the second time over the agent's reply
    carrier, asked_at = asyncio.run(_call(agent_server.port, twiml, call_sid, law, *speech))

    # Our audio came in the encoding the start announced, in 20 ms messages of the stream.
    media = carrier.of("media")
    assert media and all(message["streamSid"] == carrier.stream_sid for _, message in media)
    assert all(0 < len(base64.b64decode(message["media"]["payload"])) <= 160 for _, message in media)
    first_event = carrier.got[0][1]["event"]
    assert first_event == "media"  # the agent speaks first
    marks = carrier.of("mark")
    assert len(marks) >= 2 and len({m["mark"]["name"] for _, m in marks}) == len(marks)
    assert carrier.of("clear"), carrier.kinds()
    reply_at = next(at for at, _ in media if at > asked_at)
    assert reply_at - asked_at < 30

    call = Call.objects.with_transcript().get(carrier_call_id=call_sid)
    assert (call.direction, call.carrier_id, call.from_e164, call.to_e164) == ("inbound", "tw1", CALLER, CALLED)
    assert (call.status, call.disclosed) == ("completed", True)
    lines = [(entry.role, entry.text) for entry in call.transcript_entries.all()]
    assert lines[0][0] == "assistant" and lines[0][1].startswith(tenant_a.disclosure_text.strip())
    said = [text for role, text in lines if role == "user"]
    # Most words heard: one sentence on the phone band varies widely from one synthesis to
    # the next (test_phone_band.py measures the band over many).
    assert said and word_error_rate(ASKED, said[0]) <= 0.6, said
    assert ("system", INTERRUPTED) in lines
    assert ("system", "DTMF 1") in lines
    times = [entry.ts for entry in call.transcript_entries.all()]
    assert times == sorted(times)
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert (counter.calls, counter.seconds, counter.reserved_minutes) == (1, call.seconds, 0)
    assert call.seconds >= 5

    # The carrier's status callbacks: its duration is the billing basis, applied once.
    done = {"CallSid": call_sid, "AccountSid": ACCOUNT, "CallStatus": "completed", "CallDuration": "42",
            "From": CALLER, "To": CALLED, "Direction": "inbound"}
    for _ in range(2):
        response = signed_post(client, "/voice/twilio/tw1/status", done)
        assert response.status_code == 204
    call.refresh_from_db()
    counter.refresh_from_db()
    assert (call.seconds, call.status) == (42, "completed")
    assert (counter.calls, counter.seconds, counter.minutes) == (1, 42, 1)
    assert CarrierEvent.objects.filter(carrier_call_id=call_sid).count() == 1


# --- The webhook's answers, without a stream ----------------------------------------------------

@pytest.mark.parametrize("case", ["wrong token", "changed parameter", "other URL", "missing header"])
def test_a_webhook_not_signed_by_the_carrier_is_refused_and_creates_nothing(
        client, twilio_carrier, called_number, case):
    params = voice_params(new_call_sid())
    if case == "wrong token":
        response = signed_post(client, "/voice/twilio/tw1/incoming", params, token="0" * 32)
    elif case == "changed parameter":
        signature = RequestValidator(TOKEN).compute_signature(
            "http://testserver/voice/twilio/tw1/incoming", params)
        response = signed_post(client, "/voice/twilio/tw1/incoming", dict(params, From="+4915199999999"),
                               signature=signature)
    elif case == "other URL":
        response = signed_post(client, "/voice/twilio/tw1/incoming", params,
                               url="http://testserver/voice/twilio/tw2/incoming")
    else:
        response = signed_post(client, "/voice/twilio/tw1/incoming", params, signature=False)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "invalid_twilio_signature"
    assert not Call.objects.exists() and not UsageCounter.objects.filter(reserved_minutes__gt=0).exists()


def test_the_public_base_url_setting_is_what_the_signature_covers(client, twilio_carrier, called_number, settings):
    settings.VOICE_PUBLIC_BASE_URL = "https://voice.example.de"
    params = voice_params(new_call_sid())
    own_host = signed_post(client, "/voice/twilio/tw1/incoming", params)
    assert own_host.status_code == 403
    behind_proxy = signed_post(client, "/voice/twilio/tw1/incoming", params,
                               url="https://voice.example.de/voice/twilio/tw1/incoming")
    assert behind_proxy.status_code == 200
    assert stream_of(behind_proxy.content.decode())[0] == "wss://voice.example.de/voice/twilio/tw1/stream"


def test_a_call_to_a_number_no_tenant_owns_is_rejected(client, twilio_carrier, called_number):
    twiml = incoming(client, new_call_sid(), to="+4930555000777")
    assert ET.fromstring(twiml).find("Reject") is not None
    assert not Call.objects.exists()


def test_a_call_past_the_cap_hears_a_german_notice_and_is_kept_as_rejected(
        client, tenant_a, twilio_carrier, called_number):
    tenant_a.minute_cap = 0
    tenant_a.save(update_fields=["minute_cap"])
    call_sid = new_call_sid()
    root = ET.fromstring(incoming(client, call_sid))
    say = root.find("Say")
    assert say is not None and say.get("language") == "de-DE" and "später" in say.text
    assert root.find("Hangup") is not None and root.find("Connect") is None
    call = Call.objects.get(carrier_call_id=call_sid)
    assert (call.status, call.seconds, call.direction) == ("rejected", 0, "inbound")
    assert UsageCounter.objects.get(tenant=tenant_a).reserved_minutes == 0


def test_a_retried_webhook_answers_the_same_call_with_a_new_token(client, tenant_a, twilio_carrier, called_number):
    call_sid = new_call_sid()
    first = stream_of(incoming(client, call_sid))[1]
    second = stream_of(incoming(client, call_sid))[1]
    assert first != second
    assert Call.objects.filter(carrier_call_id=call_sid).count() == 1
    assert UsageCounter.objects.get(tenant=tenant_a).reserved_minutes == tenant_a.max_call_minutes


def test_a_status_that_ends_an_unstarted_call_releases_its_minutes(client, tenant_a, twilio_carrier, called_number):
    call_sid = new_call_sid()
    incoming(client, call_sid)
    response = signed_post(client, "/voice/twilio/tw1/status",
                           {"CallSid": call_sid, "CallStatus": "canceled", "CallDuration": "0"})
    assert response.status_code == 204
    call = Call.objects.get(carrier_call_id=call_sid)
    assert (call.status, call.seconds) == ("canceled", 0)
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert (counter.reserved_minutes, counter.calls) == (0, 1)
    unsigned = signed_post(client, "/voice/twilio/tw1/status", {"CallSid": call_sid, "CallStatus": "completed"},
                           signature=False)
    assert unsigned.status_code == 403
