"""An erasure leaves no copy of the number in any table (issue 31, finding 3): not in
webhook deliveries (whose pending retries would send it again), not in the voice
agent's sessions, not in the transcripts of web calls, which have no number of their
own and are found by the number the caller gave, not in campaign contacts nor in the
blocklist (whose entry keeps blocking under the pseudonym: test_campaign_contacts.py).
Each test scans every table of the database, every column, for the number in any
written form."""
import datetime as dt

import pytest
from django.test import Client

from calls_app.models import Call, TranscriptEntry
from campaigns_app.models import BlockedNumber, CampaignContact
from campaigns_app.scheduler import campaigns_tick
from campaigns_app.services import opt_out
from leads_app.services import lead_set_status
from tests.campaigns_app.conftest import end_call
from tests.privacy_app.conftest import (
    CALLER,
    CALLER_NATIONAL,
    CONSENT,
    GIVEN,
    START,
    attempt_all_due,
    campaign_of,
    copies_of_number,
    make_lead,
    play_call,
    rows_containing,
    web_call,
)
from webhooks_app.models import EVENT_TYPES, Attempt, Delivery
from webhooks_app.services import deliveries_sweep, delivery_attempt, endpoint_create

pytestmark = pytest.mark.django_db

URL = "/v2/privacy/erasures"
SECRET_WORDS = "Meine Kundennummer ist vertraulich"
SAID = "+49 (0)176 / 1234567"  # how the recogniser wrote it down in a web call
# The number as a scan by SQL text search would look for it, in several forms.
FORMS = (CALLER, "01761234567", "0176 1234567", GIVEN, "1761234567")


@pytest.fixture
def world(clock, numbers, carrier_client, tenant_a, api_a, receivers):
    """The caller at tenant A: a phone call, a lead (created and updated), a web call
    whose session holds the number as given, a web call in whose transcript the caller
    said it, a marketing campaign that called them (a contact with name, variables and
    the documented consent) and in whose call they opted out (the blocklist, with a
    note naming them), an export; every event sent to a receiver that takes it and to
    one that keeps failing (its deliveries stay pending, retried). And a web call of
    someone else."""
    ok, failing = receivers
    for receiver in receivers:
        endpoint_create(tenant=tenant_a, url=receiver.url, event_types=list(EVENT_TYPES))
    made = {
        "phone_call": play_call(carrier_client, text=SECRET_WORDS),
        "lead": make_lead(tenant_a),
        "web_given": web_call(tenant_a, variables={"rueckrufnummer": GIVEN}, lines=["Rufen Sie mich bitte zurück."]),
        "web_said": web_call(tenant_a, lines=[f"Meine Nummer ist {SAID}.", SECRET_WORDS]),
        "web_other": web_call(tenant_a, variables={"name": "Jemand"}, lines=["Jemand anderes, ohne Nummer."]),
    }
    lead_set_status(lead=made["lead"], status="contacted")
    made["campaign"], _ = campaign_of(tenant_a, [{"phone": GIVEN, "name": "Anna Beispiel",
                                                  "variables": {"Rueckruf": CALLER_NATIONAL}, **CONSENT}])
    campaigns_tick(now=START)
    made["campaign_call"] = Call.objects.get(to_e164=CALLER)
    end_call(made["campaign_call"], when=START + dt.timedelta(minutes=1))
    campaigns_tick(now=START + dt.timedelta(minutes=1))
    opt_out(tenant=tenant_a, phone=CALLER, call_id=made["campaign_call"].pk,
            note=f"Anna Beispiel ({CALLER_NATIONAL}): bitte keine Anrufe mehr")
    assert CampaignContact.objects.get().outcome == "reached"
    attempt_all_due()
    assert api_a.post("/v2/privacy/exports", {"phone": CALLER}, format="json").status_code == 201
    made["failing_before"] = len(failing.requests)
    return made


def erase(api, body):
    response = api.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["counts"]


def test_before_the_erasure_the_scan_finds_the_number_in_every_kind_of_copy(world, receivers):
    tables = {table for table, _, _ in copies_of_number(CALLER)}
    assert {"calls_app_call", "calls_app_carrierevent", "leads_app_lead", "webhooks_app_delivery",
            "agent_app_agentsession", "calls_app_transcriptentry", "privacy_app_export", "calls_app_simdial",
            "campaigns_app_campaigncontact", "campaigns_app_blockednumber"} <= tables
    # The receivers got it too, and the failing one keeps a pending retry of each: the
    # phone call's start and end, the lead's two, the campaign call's start and end and
    # its contact's completion.
    assert any(CALLER.encode() in body for _, _, body in receivers[1].requests)
    assert Delivery.objects.filter(state=Delivery.State.PENDING, payload__contains=CALLER).count() == 7


def test_afterwards_no_table_holds_the_number_in_any_form(api_a, world):
    counts = erase(api_a, {"phone": GIVEN})

    assert copies_of_number(CALLER) == set()
    for form in FORMS:
        assert rows_containing(form) == set(), form
    assert rows_containing(SECRET_WORDS) == set()
    # The phone call, both web calls that name the number and the campaign's call.
    assert counts["calls"] == 4
    # To each endpoint: the phone call's start and end, the lead's creation and update,
    # the end of both web calls (no number in them, found by the erased calls' ids), the
    # campaign call's start and end and its contact's completion.
    assert counts["webhookDeliveries"] == 2 * 9
    assert counts["agentSessions"] == 1
    assert counts["exports"] == 1
    assert (counts["campaignContacts"], counts["blocklistEntries"]) == (1, 1)
    # What is kept, is kept without the number: the objection, and the proof of the
    # consent the caller was called under (its source named the number).
    entry = BlockedNumber.objects.get()
    assert (entry.reason, entry.note, entry.erased_at) == ("opt_out", "", START)
    contact = CampaignContact.objects.get()
    assert (contact.name, contact.variables, contact.redacted, contact.outcome) == ("", {}, True, "reached")
    assert contact.consent_source == f"Webformular acme.example/angebote, Rückrufnummer {contact.phone}"
    assert contact.consent_text == CONSENT["consentText"] and contact.phone.startswith("anon-")


def test_the_other_callers_web_call_is_kept_whole(api_a, world):
    erase(api_a, {"phone": CALLER})
    other = Call.objects.get(pk=world["web_other"].pk)
    assert not other.redacted
    assert list(TranscriptEntry.objects.filter(call=other).values_list("text", flat=True)) == [
        "Jemand anderes, ohne Nummer."]
    assert other.agent_session.variables == {"name": "Jemand"}


def test_pending_deliveries_that_carry_it_are_stopped_and_never_sent(api_a, world, receivers, clock):
    failing = receivers[1]
    carrying = set(Delivery.objects.filter(state=Delivery.State.PENDING, payload__contains=CALLER)
                   .values_list("pk", flat=True))
    attempts_before = Attempt.objects.filter(delivery_id__in=carrying).count()

    erase(api_a, {"phone": CALLER})

    assert set(Delivery.objects.filter(pk__in=carrying).values_list("state", flat=True)) == {"erased"}
    # The ones still pending name neither the number nor an erased call: the other
    # caller's web call, the campaign's start and completion.
    other = Delivery.objects.filter(state=Delivery.State.PENDING)
    assert sorted(other.values_list("event_type", flat=True)) == ["call.ended", "campaign.completed",
                                                                   "campaign.started"]
    # An hour later every retry would be due: the sweep and the worker send those
    # again, and none of the erased ones.
    clock.set(START + dt.timedelta(hours=1))
    deliveries_sweep()
    for pk in carrying:
        assert delivery_attempt(delivery_id=pk) is None
    sent_after = [body for _, _, body in failing.requests[world["failing_before"]:]]
    assert len(sent_after) == 3 and any(world["web_other"].pk.encode() in body for body in sent_after)
    assert not any(b"1761234567" in body.replace(b" ", b"") for body in sent_after)
    assert Attempt.objects.filter(delivery_id__in=carrying).count() == attempts_before


def test_an_erased_payload_keeps_only_the_event_and_the_id(api_a, world):
    erase(api_a, {"phone": CALLER})
    lead_created = Delivery.objects.filter(event_type="lead.created").first()
    assert lead_created.payload == (
        f'{{"type":"lead.created","timestamp":"{START.isoformat().replace("+00:00", "Z")}",'
        f'"data":{{"id":"{world["lead"].pk}","erased":true}}}}')


def test_the_admin_delivery_pages_no_longer_show_it(api_a, world, admin_user):
    erase(api_a, {"phone": CALLER})
    browser = Client()
    browser.force_login(admin_user)
    listing = browser.get("/admin/webhooks_app/delivery/")
    assert listing.status_code == 200
    for delivery in Delivery.objects.all():
        page = browser.get(f"/admin/webhooks_app/delivery/{delivery.pk}/change/")
        assert page.status_code == 200
        assert "1761234567" not in page.content.decode()


def test_a_delivery_erased_while_its_attempt_is_under_way_stays_erased(api_a, world, monkeypatch, clock):
    """The bytes of an attempt already on the wire cannot be called back; its end must not
    put the delivery back in the queue."""
    from webhooks_app import transport

    clock.set(START + dt.timedelta(hours=1))
    delivery = Delivery.objects.get(state=Delivery.State.PENDING, event_type="lead.created")
    real_post = transport.post

    def post_while_erasing(url, **kwargs):
        erase(api_a, {"phone": CALLER})
        return real_post(url, **kwargs)

    monkeypatch.setattr(transport, "post", post_while_erasing)
    delivery_attempt(delivery_id=delivery.pk, now=clock())
    monkeypatch.setattr(transport, "post", real_post)

    delivery.refresh_from_db()
    assert delivery.state == "erased" and delivery.attempt_set.order_by("number").last().outcome == "failed"
    clock.set(START + dt.timedelta(hours=2))
    assert delivery_attempt(delivery_id=delivery.pk) is None
