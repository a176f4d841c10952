"""A campaign's call over a Twilio-compatible carrier, whole: the scheduler dials through
the carrier's REST API (a fake on loopback), the callee answers (the carrier fetches the
dial's Url, signed by Twilio's own RequestValidator), and a Media Streams client plays
the callee in real time with German speech of our own synthesis. The campaign's
assistant answers, with the contact's variables in its opening; "Ich möchte nicht mehr
angerufen werden" is heard (Whisper on the phone band hears eSpeak's "Bitte rufen Sie
mich nicht mehr an" too unevenly for a test: tests/agent_app/test_policy.py has its
slips), confirmed politely, the number put on the blocklist and the call ended by the
agent — although the assistant was not given the tool (a campaign call always takes an
objection)."""
import asyncio
from datetime import UTC, datetime
from urllib.parse import urlsplit

import numpy
import pytest
from websockets.exceptions import ConnectionClosed

from agent_app.audio import WireFormat
from calls_app.models import Call
from campaigns_app import services as campaigns
from campaigns_app.contact_rows import from_json
from campaigns_app.models import CampaignAttempt, CampaignContact
from campaigns_app.scheduler import campaigns_tick
from console.assistants.models import Assistant
from scripts_app.services import script_override_put
from tests.agent_app.conftest import spoken
from tests.agent_app.phone import CALLED, MediaStream, signed_post, stream_of, voice_params
from tests.agent_app.test_twilio_call import on_test_server

pytestmark = pytest.mark.django_db(transaction=True)
CALLEE = "+4917612300456"
TUESDAY_10 = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)  # 10:00 in Berlin: the default window is open
MULAW = WireFormat("mulaw", 8000)
SILENCE = MULAW.from_pcm(numpy.zeros(320, dtype="<i2").tobytes(), 16000)  # 20 ms


@pytest.fixture
def campaign(settings, tenant_a, twilio_carrier, called_number, monkeypatch):
    settings.VOICE_OUTBOUND_CARRIER = "tw1"
    settings.VOICE_PUBLIC_BASE_URL = "http://testserver"
    monkeypatch.setattr("campaigns_app.services.lifecycle.job_enqueue_on_commit", lambda *args, **kwargs: None)
    tenant_a.max_call_minutes = 2
    tenant_a.save(update_fields=["max_call_minutes"])
    Assistant.objects.create(tenant=tenant_a, name="Allgemein", tools=["create_callback"])  # the tenant's first
    reminder = Assistant.objects.create(tenant=tenant_a, name="Terminerinnerung", tools=[])
    script_override_put(tenant=tenant_a, touchpoint_id="inbound.greeting",
                        text="Guten Tag, {{Vorname}}. Hier ist {{companyName}} wegen Ihres Termins am Freitag.")
    campaign = campaigns.campaign_create(tenant=tenant_a, name="Erinnerung", purpose="service",
                                         assistant=reminder.pk, from_number=CALLED)
    rows, errors = from_json([{"phone": CALLEE, "name": "Jürgen Müller", "variables": {"Vorname": "Jürgen"}}],
                             time_zone=tenant_a.time_zone, now=TUESDAY_10)
    assert not errors
    campaigns.contacts_add(campaign=campaign, rows=rows, now=TUESDAY_10)
    return campaigns.campaign_transition(campaign=campaign, change="start", now=TUESDAY_10)


async def _callee(port, twiml, call_sid, objection):
    url, token = stream_of(twiml)
    async with MediaStream(on_test_server(url, port), call_sid, token) as stream:
        await stream.start()
        await stream.media_until(SILENCE, lambda: len(stream.of("mark")) >= 2)  # the opening was spoken
        await stream.media(objection)
        try:
            while stream.ws.close_code is None:  # until the agent ends the call (the grant at the latest)
                await stream.media(SILENCE)
        except ConnectionClosed:
            pass
        await stream.ws.wait_closed()
        return stream


@pytest.mark.slow
def test_a_campaign_call_is_the_campaigns_assistant_and_an_objection_by_voice_ends_it(
        agent_server, client, tenant_a, campaign, fake_twilio, whisper_ready, instant_speech):
    campaigns_tick(now=TUESDAY_10)
    assert fake_twilio.wait_for(1)
    form = fake_twilio.requests[0]["form"]
    attempt = CampaignAttempt.objects.select_related("call").get()
    call = attempt.call
    assert (form["To"], form["From"]) == (CALLEE, CALLED)
    assert fake_twilio.requests[0]["headers"]["I-Twilio-Idempotency-Token"] == attempt.pk
    assert call.assistant == campaign.assistant

    url = urlsplit(form["Url"])
    answer = signed_post(client, f"{url.path}?{url.query}",
                         voice_params(call.carrier_call_id, to=CALLEE, caller=CALLED, direction="outbound-api"),
                         url=form["Url"])
    assert answer.status_code == 200
    objection = spoken("Ich möchte nicht mehr angerufen werden.", MULAW)
    stream = asyncio.run(_callee(agent_server.port, answer.content.decode(), call.carrier_call_id, objection))
    assert stream.ws.close_code is not None

    call = Call.objects.with_transcript().get(pk=call.pk)
    lines = [(entry.role, entry.text) for entry in call.transcript_entries.all()]
    assert lines[0][0] == "assistant" and lines[0][1].startswith(tenant_a.disclosure_text.strip())
    assert "Guten Tag, Jürgen. Hier ist Acme wegen Ihres Termins am Freitag." in lines[0][1]
    replies = [text for role, text in lines if role == "assistant"]
    assert any(text.startswith("Selbstverständlich. Ich vermerke, dass Sie keine Anrufe mehr") for text in replies), "\n".join(f"{r}: {t}" for r, t in lines)
    assert replies[-1].endswith("Auf Wiederhören!")
    assert (call.status, call.assistant_id) == ("completed", campaign.assistant_id)
    assert [action["tool"] for action in call.assistant_actions] == ["opt_out", "end_call"]
    entry = tenant_a.blocked_numbers.get()
    assert (entry.phone, entry.reason, entry.call_id) == (CALLEE, "opt_out", call.pk)

    # The carrier's status callback, then the scheduler's next tick: the contact stays opted out.
    done = signed_post(client, "/voice/twilio/tw1/status",
                       {"CallSid": call.carrier_call_id, "CallStatus": "completed", "CallDuration": str(call.seconds)})
    assert done.status_code == 204
    campaigns_tick(now=TUESDAY_10)
    contact = CampaignContact.objects.get(campaign=campaign)
    assert (contact.status, contact.outcome, contact.attempts) == ("done", "opted_out", 1)
    assert CampaignAttempt.objects.get().state == "ended"
