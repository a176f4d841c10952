"""SMS (issue 37 §4): the tenant's provider — sipgate, a Twilio carrier, its own signed
webhook — each against a loopback fake speaking the provider's wire format; only to the
caller's own German mobile number, never to a blocked one, within the daily cap, once
per key, a reminder sent when due, and reached by export and erasure."""
import base64
import datetime as dt
import json
from typing import Any

import pytest
from django.utils import timezone
from standardwebhooks import Webhook
from twilio.rest import Client as TwilioClient

from calls_app.kinds.credentials import credentials_seal
from calls_app.models import Call, Carrier
from campaigns_app.models import BlockedNumber
from console.errors import TenantLimitReached, ValidationFailed
from console.numbers.models import PhoneNumber
from messaging_app import services
from messaging_app.errors import MessagingNotConfigured, SmsNoCaller, SmsNotMobile, SmsNumberBlocked
from messaging_app.models import Sms
from tests.conftest import error_of
from tests.messaging_app.conftest import MOBILE, TOKEN, TOKEN_ID, WHEN, call_from
from tests.receiver import Receiver, closed_port_url

pytestmark = pytest.mark.django_db
COMMITTED: Any = None
@pytest.fixture(autouse=True)
def _jobs_run_on_commit(django_capture_on_commit_callbacks: Any) -> None:
    """The send job is queued on commit: run it when the service's transaction ends."""
    global COMMITTED
    COMMITTED = django_capture_on_commit_callbacks


def send(tenant: Any, call: Call, key: str = "k1", **kwargs: Any) -> Sms:
    with COMMITTED(execute=True):
        return services.sms_send(tenant=tenant, call_id=call.pk, template="confirmation", variables=WHEN, key=key,
                                 **kwargs)


def test_sipgate_gets_the_caller_its_text_with_the_token_and_the_token_is_never_shown(tenant_a, api_a, sipgate):
    body = api_a.get("/v2/messaging").json()
    assert body["provider"] == "sipgate" and body["sipgateTokenSet"] is True and TOKEN not in json.dumps(body)
    sms = send(tenant_a, call_from(tenant_a))
    sms.refresh_from_db()
    assert sms.status == "sent" and sms.sent_at is not None and sms.to_e164 == MOBILE
    [request] = sipgate.requests
    assert request["path"] == "/v2/sessions/sms"
    assert request["auth"] == "Basic " + base64.b64encode(f"{TOKEN_ID}:{TOKEN}".encode()).decode()
    assert request["body"] == {"smsId": "s0", "recipient": MOBILE, "message": sms.text}
    assert sms.text == ("Acme: Ihr Termin am Dienstag, 1. Dezember um 10:30 ist bestätigt. Zum Verschieben oder "
                        "Absagen rufen Sie uns einfach an.")
    listed = api_a.get("/v2/messaging/sms").json()["sms"]
    assert [(item["id"], item["status"], item["to"]) for item in listed] == [(sms.pk, "sent", MOBILE)]


def test_the_same_key_is_the_same_sms_sent_once(tenant_a, sipgate):
    call = call_from(tenant_a)
    first, again = send(tenant_a, call, key="booking-1"), send(tenant_a, call, key="booking-1")
    assert first.pk == again.pk and len(sipgate.requests) == 1 and Sms.objects.count() == 1
    services.sms_deliver(sms_id=first.pk)  # a job run twice sends nothing more
    assert len(sipgate.requests) == 1


def test_only_german_mobile_numbers_of_a_caller_and_never_a_blocked_one(tenant_a, tenant_b, sipgate):
    with pytest.raises(SmsNotMobile):
        send(tenant_a, call_from(tenant_a, "+49301234567"))
    with pytest.raises(SmsNotMobile):
        send(tenant_a, call_from(tenant_a, "+436641234567"))  # an Austrian mobile number
    with pytest.raises(SmsNoCaller):
        send(tenant_a, call_from(tenant_a, ""))  # a browser session has no number
    BlockedNumber.objects.create(tenant=tenant_a, phone="+4915112345678")
    with pytest.raises(SmsNumberBlocked):
        send(tenant_a, call_from(tenant_a, "+4915112345678"))
    with pytest.raises(ValidationFailed) as other:  # another tenant's call is no call of this one
        send(tenant_a, call_from(tenant_b))
    assert "callId" in other.value.details
    assert sipgate.requests == [] and Sms.objects.count() == 0


def test_a_missing_variable_and_an_unknown_template_are_refused(tenant_a, sipgate):
    call = call_from(tenant_a)
    with pytest.raises(ValidationFailed) as missing:
        services.sms_send(tenant=tenant_a, call_id=call.pk, template="confirmation", variables={"date": "x"},
                          key="k")
    assert "variables.time" in missing.value.details
    with pytest.raises(ValidationFailed):
        services.sms_send(tenant=tenant_a, call_id=call.pk, template="werbung", variables={}, key="k")
    assert sipgate.requests == []


def test_the_daily_cap_refuses_the_next_sms(settings, tenant_a, sipgate):
    settings.TENANT_MAX_SMS_PER_DAY = 2
    call = call_from(tenant_a)
    send(tenant_a, call, key="a"), send(tenant_a, call, key="b")
    with pytest.raises(TenantLimitReached) as refused:
        send(tenant_a, call, key="c")
    assert refused.value.details["limit"] == "smsPerDay" and len(sipgate.requests) == 2
    assert send(tenant_a, call, key="a").status == "sent"  # a retry of a sent one is no new SMS


def test_no_sms_chosen_no_sms(tenant_a, api_a):
    api_a.patch("/v2/messaging", {"provider": ""}, format="json")
    with pytest.raises(MessagingNotConfigured):
        send(tenant_a, call_from(tenant_a))


def test_twilio_sends_through_the_carriers_messages_api_as_twilios_client_does(tenant_a, api_a, fake_twilio):
    Carrier.objects.create(id="tw-sms", kind="twilio", secret_nonce="n", credentials_sealed=credentials_seal(
        {"account_sid": "AC123", "auth_token": "tw-token", "api_base": fake_twilio.url}))
    PhoneNumber.objects.create(tenant=tenant_a, e164="+493055501234")
    refused = api_a.patch("/v2/messaging", {"provider": "twilio", "twilioCarrier": "tw-sms",
                                            "senderE164": "+493099999999"}, format="json")
    assert refused.status_code == 400 and "senderE164" in error_of(refused)["details"]  # not the tenant's number
    assert api_a.patch("/v2/messaging", {"provider": "twilio", "twilioCarrier": "tw-sms",
                                         "senderE164": "+493055501234"}, format="json").status_code == 200
    sms = send(tenant_a, call_from(tenant_a))
    sms.refresh_from_db()
    [ours] = fake_twilio.messages
    assert sms.status == "sent" and sms.provider_id == ours["sid"] and ours["key"] == sms.pk
    # The reference: twilio's own client, pointed at the same fake.
    client = TwilioClient("AC123", "tw-token")
    client.api.base_url = fake_twilio.url
    client.messages.create(to=MOBILE, from_="+493055501234", body=sms.text)
    theirs = fake_twilio.messages[1]
    assert (ours["path"], ours["form"]) == (theirs["path"], theirs["form"])
    requests = [r for r in fake_twilio.requests if r["path"].endswith("/Messages.json")]
    assert requests[0]["auth"] == requests[1]["auth"]
    assert requests[0]["headers"]["Content-Type"] == requests[1]["headers"]["Content-Type"]


def test_the_webhook_provider_signs_like_our_webhooks(tenant_a, api_a):
    receiver = Receiver([200])
    try:
        answer = api_a.patch("/v2/messaging", {"provider": "webhook", "webhookUrl": receiver.url},
                             format="json").json()
        secret = answer["webhookSecret"]
        assert "webhookSecret" not in api_a.get("/v2/messaging").json()
        sms = send(tenant_a, call_from(tenant_a))
        [(path, headers, body)] = receiver.requests
    finally:
        receiver.stop()
    payload = Webhook(secret).verify(body, {name.lower(): value for name, value in headers.items()})
    assert path == "/hook" and headers["webhook-id"] == sms.pk
    assert payload == {"type": "sms.send", "id": sms.pk, "to": MOBILE, "text": sms.text, "template": "confirmation",
                       "callId": sms.call_id}
    sms.refresh_from_db()
    assert sms.status == "sent"


def test_a_webhook_url_to_a_private_address_is_refused(settings, api_a):
    settings.OUTBOUND_ALLOW_PRIVATE_TARGETS = False
    refused = api_a.patch("/v2/messaging", {"provider": "webhook", "webhookUrl": "https://169.254.169.254/sms"},
                          format="json")
    assert refused.status_code == 400 and error_of(refused)["code"] == "messaging_url_refused"


def test_an_sms_that_never_reached_the_provider_is_tried_again_then_failed(settings, tenant_a, api_a):
    settings.MESSAGING_SIPGATE_API_BASE = closed_port_url().removesuffix("/hook")  # nothing listens
    settings.MESSAGING_MAX_ATTEMPTS = 2
    api_a.patch("/v2/messaging", {"provider": "sipgate", "sipgateTokenId": TOKEN_ID, "sipgateToken": TOKEN,
                                  "sipgateSmsId": "s0"}, format="json")
    sms = send(tenant_a, call_from(tenant_a))
    sms.refresh_from_db()
    assert (sms.status, sms.attempts) == ("queued", 1) and "connection failed" in sms.error
    Sms.objects.filter(pk=sms.pk).update(send_at=timezone.now())
    assert services.sms_due_send() == 0
    sms.refresh_from_db()
    assert (sms.status, sms.attempts) == ("failed", 2)


def test_a_provider_that_answers_an_error_is_failed_not_retried(tenant_a, sipgate):
    sipgate.fail = (500, {"message": "boom"})
    sms = send(tenant_a, call_from(tenant_a))
    sms.refresh_from_db()
    assert (sms.status, sms.attempts) == ("failed", 1) and "HTTP 500" in sms.error
    assert services.sms_due_send() == 0 and len(sipgate.requests) == 1


def test_a_reminder_is_sent_the_day_before_and_not_to_a_number_blocked_since(tenant_a, sipgate):
    call = call_from(tenant_a)
    starts = timezone.now() + dt.timedelta(days=3)
    reminder = services.sms_reminder_schedule(tenant=tenant_a, call_id=call.pk, starts_at=starts, key="rem-1")
    assert reminder is not None and reminder.status == "queued" and reminder.send_at == starts - dt.timedelta(days=1)
    assert "Erinnerung" in reminder.text and "morgen" in reminder.text
    assert services.sms_due_send() == 0 and sipgate.requests == []  # not due yet
    Sms.objects.filter(pk=reminder.pk).update(send_at=timezone.now())
    assert services.sms_due_send() == 1 and len(sipgate.requests) == 1
    # Within a day: no reminder. Blocked after scheduling: cancelled, never sent.
    assert services.sms_reminder_schedule(tenant=tenant_a, call_id=call.pk, key="rem-2",
                                          starts_at=timezone.now() + dt.timedelta(hours=20)) is None
    later = services.sms_reminder_schedule(tenant=tenant_a, call_id=call.pk, starts_at=starts, key="rem-3")
    assert later is not None
    BlockedNumber.objects.create(tenant=tenant_a, phone=MOBILE)
    Sms.objects.filter(pk=later.pk).update(send_at=timezone.now())
    assert services.sms_due_send() == 0 and len(sipgate.requests) == 1
    later.refresh_from_db()
    assert later.status == "cancelled"


def test_a_cancelled_reminder_is_not_sent(tenant_a, sipgate):
    reminder = services.sms_reminder_schedule(tenant=tenant_a, call_id=call_from(tenant_a).pk, key="rem",
                                              starts_at=timezone.now() + dt.timedelta(days=2))
    assert reminder is not None and services.sms_cancel(sms=reminder)
    Sms.objects.filter(pk=reminder.pk).update(send_at=timezone.now())
    assert services.sms_due_send() == 0 and sipgate.requests == []


def test_export_and_erasure_reach_the_sms(tenant_a, api_a, sipgate):
    sent = send(tenant_a, call_from(tenant_a))
    exported = api_a.post("/v2/privacy/exports", {"phone": MOBILE}, format="json").json()
    assert [item["id"] for item in exported["document"]["sms"]] == [sent.pk]
    assert exported["document"]["sms"][0]["text"] == sent.text
    receipt = api_a.post("/v2/privacy/erasures", {"phone": MOBILE}, format="json").json()
    assert receipt["counts"]["sms"] == 1 and not Sms.objects.exists()


def test_another_tenants_sms_are_not_listed(tenant_a, api_b, sipgate):
    send(tenant_a, call_from(tenant_a))
    assert api_b.get("/v2/messaging/sms").json() == {"sms": []}
