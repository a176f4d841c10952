"""The default messaging provider `carrier` (issue 37 §4, "declare once"): a tenant that
never chose a provider sends a call's SMS through that call's own carrier where its kind
sends SMS (a Twilio carrier: its Messages API on a loopback fake speaking Twilio's wire,
twilio's own client the reference), from the number the caller called; a call through a
carrier that sends none (SIP, a browser session) is refused clearly; `""` chosen still
means no SMS."""
import base64
import datetime as dt
from typing import Any

import pytest
from django.utils import timezone
from twilio.rest import Client as TwilioClient

from calls_app.models import Call, Carrier
from calls_app.services import call_request_web, carrier_create
from console.assistants.models import Assistant
from messaging_app import services
from messaging_app.errors import MessagingNotConfigured, SmsCarrierCannotSend
from messaging_app.models import MessagingSettings, Sms
from tests.messaging_app.conftest import MOBILE, WHEN
from tools_app.definitions import tool_definitions
from tools_app.services import tool_run

pytestmark = pytest.mark.django_db

ACCOUNT, AUTH_TOKEN = "AC" + "7" * 32, "tw-secret"
CALLED = "+493055501234"  # the tenant's number the caller called
MESSAGES = f"/2010-04-01/Accounts/{ACCOUNT}/Messages.json"


@pytest.fixture
def twilio_line(fake_twilio: Any) -> Carrier:
    """A Twilio carrier as `create_carrier tw1 --kind twilio --account-sid … --auth-token …
    --api-base …` makes it, its REST API the loopback fake."""
    carrier, _secret = carrier_create(carrier_id="tw1", kind="twilio", credentials={
        "account_sid": ACCOUNT, "auth_token": AUTH_TOKEN, "api_base": fake_twilio.url})
    return carrier


def call_through(tenant: Any, carrier: Carrier, *, direction: str = "inbound", caller: str = MOBILE) -> Call:
    ours, theirs = CALLED, caller
    numbers = {"from_e164": theirs, "to_e164": ours} if direction == "inbound" else {"from_e164": ours,
                                                                                      "to_e164": theirs}
    return Call.objects.create(tenant=tenant, carrier=carrier, direction=direction, status="completed", **numbers)


def send(capture: Any, tenant: Any, call: Call, key: str = "k1") -> Sms:
    with capture(execute=True):  # the send job is queued on commit: run it when the service's transaction ends
        sms = services.sms_send(tenant=tenant, call_id=call.pk, template="confirmation", variables=WHEN, key=key)
    sms.refresh_from_db()
    return sms


def messages_posted(fake: Any) -> list[dict[str, Any]]:
    return [request for request in fake.requests if request["path"].endswith("/Messages.json")]


def test_a_twilio_call_sends_through_its_carrier_without_any_messaging_settings(
        tenant_a, api_a, twilio_line, fake_twilio, django_capture_on_commit_callbacks):
    assert not MessagingSettings.objects.exists()
    assert api_a.get("/v2/messaging").json()["provider"] == "carrier"
    sms = send(django_capture_on_commit_callbacks, tenant_a, call_through(tenant_a, twilio_line))
    [request] = messages_posted(fake_twilio)
    assert request["path"] == MESSAGES
    assert request["form"] == {"To": MOBILE, "From": CALLED, "Body": sms.text}
    assert request["headers"]["I-Twilio-Idempotency-Token"] == sms.pk
    assert request["auth"] == "Basic " + base64.b64encode(f"{ACCOUNT}:{AUTH_TOKEN}".encode()).decode()
    assert (sms.status, sms.provider, sms.provider_id) == ("sent", "twilio", fake_twilio.messages[0]["sid"])
    # The reference: twilio's own client sending the same SMS to the same fake.
    client = TwilioClient(ACCOUNT, AUTH_TOKEN)
    client.api.base_url = fake_twilio.url
    client.messages.create(to=MOBILE, from_=CALLED, body=sms.text)
    ours, theirs = messages_posted(fake_twilio)
    assert (ours["path"], ours["form"], ours["auth"]) == (theirs["path"], theirs["form"], theirs["auth"])
    assert ours["headers"]["Content-Type"] == theirs["headers"]["Content-Type"]


def test_a_retry_sends_nothing_twice(tenant_a, twilio_line, fake_twilio, django_capture_on_commit_callbacks):
    call = call_through(tenant_a, twilio_line)
    first = send(django_capture_on_commit_callbacks, tenant_a, call, key="booking-1")
    again = send(django_capture_on_commit_callbacks, tenant_a, call, key="booking-1")
    assert first.pk == again.pk and Sms.objects.count() == 1
    assert services.sms_deliver(sms_id=first.pk) == "sent"  # the job run twice
    assert services.sms_due_send() == 0
    assert len(messages_posted(fake_twilio)) == 1


def test_an_outbound_call_sends_from_the_number_it_showed(tenant_a, twilio_line, fake_twilio,
                                                          django_capture_on_commit_callbacks):
    send(django_capture_on_commit_callbacks, tenant_a, call_through(tenant_a, twilio_line, direction="outbound"))
    [request] = messages_posted(fake_twilio)
    assert (request["form"]["To"], request["form"]["From"]) == (MOBILE, CALLED)


def test_a_reminder_leaves_a_day_later_through_the_calls_carrier(tenant_a, twilio_line, fake_twilio):
    call = call_through(tenant_a, twilio_line)
    reminder = services.sms_reminder_schedule(tenant=tenant_a, call_id=call.pk, key="rem-1",
                                              starts_at=timezone.now() + dt.timedelta(days=3))
    assert reminder is not None and reminder.call_id == call.pk and reminder.status == "queued"
    assert services.sms_due_send() == 0 and messages_posted(fake_twilio) == []  # not due yet
    Sms.objects.filter(pk=reminder.pk).update(send_at=timezone.now())
    assert services.sms_due_send() == 1
    [request] = messages_posted(fake_twilio)
    assert request["form"] == {"To": MOBILE, "From": CALLED, "Body": reminder.text}
    assert request["headers"]["I-Twilio-Idempotency-Token"] == reminder.pk


def test_a_sip_call_and_a_browser_session_are_refused_clearly(tenant_a, fake_twilio,
                                                              django_capture_on_commit_callbacks):
    sip, _secret = carrier_create(carrier_id="sip1", kind="sip", credentials={
        "registrar": "sip:127.0.0.1:5060", "username": "praxis", "password": "geheim"})
    for call in (call_through(tenant_a, sip), call_request_web(tenant=tenant_a, test=True)):
        with pytest.raises(SmsCarrierCannotSend) as refused:
            send(django_capture_on_commit_callbacks, tenant_a, call)
        assert (refused.value.status, refused.value.code) == (409, "sms_carrier_cannot_send")
    # The model hears why, in German.
    assistant = Assistant.objects.create(tenant=tenant_a, name="Empfang", tools=["send_sms"])
    answer = tool_run(assistant=assistant, call_id=call_through(tenant_a, sip).pk, name="send_sms",
                      arguments={"template": "confirmation", "variables": WHEN})
    assert (answer["ok"], answer["error"]) == (False, "sms_refused")
    assert answer["message"] == "Der Telefonieanbieter dieses Anrufs kann keine SMS senden."
    assert not Sms.objects.exists() and fake_twilio.requests == []


def test_a_call_is_offered_send_sms_only_where_an_sms_can_reach_its_caller(tenant_a, twilio_line):
    """The model (and the offline policy's promise "Die Bestätigung schicke ich Ihnen per
    SMS.") gets send_sms only in a call whose SMS could leave."""
    sip, _secret = carrier_create(carrier_id="sip1", kind="sip", credentials={
        "registrar": "sip:127.0.0.1:5060", "username": "praxis", "password": "geheim"})
    assistant = Assistant.objects.create(tenant=tenant_a, name="Empfang", tools=["send_sms"])

    def offered(call: Call) -> bool:
        return [d["function"]["name"] for d in tool_definitions(assistant=assistant, call_id=call.pk)] == ["send_sms"]

    assert offered(call_through(tenant_a, twilio_line))
    assert not offered(call_through(tenant_a, sip))  # a carrier that sends no SMS
    assert not offered(call_through(tenant_a, twilio_line, caller="+493012345678"))  # a landline
    assert not offered(call_request_web(tenant=tenant_a, test=True))  # no caller's number


def test_no_sms_chosen_still_refuses_and_the_tool_is_not_offered(tenant_a, api_a, twilio_line, fake_twilio,
                                                                 django_capture_on_commit_callbacks):
    assistant = Assistant.objects.create(tenant=tenant_a, name="Empfang", tools=["send_sms"])
    offered = [tool["function"]["name"] for tool in tool_definitions(assistant=assistant)]
    assert offered == ["send_sms"]  # the default offers it
    assert api_a.patch("/v2/messaging", {"provider": ""}, format="json").json()["provider"] == ""
    with pytest.raises(MessagingNotConfigured):
        send(django_capture_on_commit_callbacks, tenant_a, call_through(tenant_a, twilio_line))
    assert tool_definitions(assistant=assistant) == []
    assert not Sms.objects.exists() and fake_twilio.requests == []


def test_a_first_change_of_the_templates_keeps_the_default(api_a):
    changed = api_a.patch("/v2/messaging", {"templates": {"anfahrt": "So finden Sie uns: {weg}"}}, format="json")
    assert changed.status_code == 200 and changed.json()["provider"] == "carrier"
    assert MessagingSettings.objects.get().provider == "carrier"


def test_a_queued_sms_whose_provider_became_carrier_on_a_sip_call_fails_unsent(
        tenant_a, api_a, django_capture_on_commit_callbacks):
    """A reminder queued under a provider the tenant gave up since: at sending time the
    call's carrier decides, and one that sends no SMS fails the SMS (nothing sent)."""
    sip = Carrier.objects.create(id="sip2", kind="sip", secret_nonce="n")
    api_a.patch("/v2/messaging", {"provider": "webhook", "webhookUrl": "https://sms.acme.example/send"},
                format="json")
    reminder = services.sms_reminder_schedule(tenant=tenant_a, call_id=call_through(tenant_a, sip).pk, key="rem",
                                              starts_at=timezone.now() + dt.timedelta(days=2))
    assert reminder is not None and reminder.provider == "webhook"
    api_a.patch("/v2/messaging", {"provider": "carrier"}, format="json")
    Sms.objects.filter(pk=reminder.pk).update(send_at=timezone.now())
    assert services.sms_due_send() == 0
    reminder.refresh_from_db()
    assert (reminder.status, reminder.attempts) == ("failed", 0) and "cannot send SMS" in reminder.error
