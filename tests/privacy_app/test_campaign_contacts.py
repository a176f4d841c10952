"""Exports and erasures by number reach the campaigns (issue 30, issue 31 finding 3):
the caller's contacts with their consent, outcomes and attempts, and the blocklist.
An erasure redacts the contacts, ends the open ones as `erased` without another dial,
and keeps the blocklist entry under the number's pseudonym, so that an erased caller
who objected is never called again; the proof of a consent the caller was called
under is kept (§ 7a UWG) until its five years are over."""
import datetime as dt

import pytest

from calls_app.models import Call, SimDial, UsageCounter
from campaigns_app.models import BlockedNumber, CampaignAttempt, CampaignContact
from campaigns_app.retention import contacts_redact_expired
from campaigns_app.scheduler import _send, campaign_step, campaigns_tick, dials_resend
from campaigns_app.services import blocklist_add, opt_out
from console.pseudonyms import pseudonym_for
from tests.campaigns_app.conftest import end_call
from tests.privacy_app.conftest import (
    CALLER,
    CALLER_NATIONAL,
    CONSENT,
    START,
    campaign_of,
    copies_of_number,
)
from webhooks_app.models import EVENT_TYPES, Delivery
from webhooks_app.services import endpoint_create

pytestmark = pytest.mark.django_db

OTHER = "+4917699887766"
LATER = START + dt.timedelta(minutes=1)


@pytest.fixture(autouse=True)
def minutes_enough(tenant_a):
    """Tenant A's cap takes every call of these tests (2 minutes granted per call)."""
    tenant_a.minute_cap, tenant_a.max_call_minutes = 1000, 2
    tenant_a.save()


def erase(api, body):
    response = api.post("/v2/privacy/erasures", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["counts"]


def export(api, phone):
    response = api.post("/v2/privacy/exports", {"phone": phone}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["document"]


def called(tenant, people, *, status="completed", **fields):
    """A campaign whose first tick called every contact and whose calls ended (`status`)."""
    campaign, _ = campaign_of(tenant, people, concurrency=len(people), **fields)
    campaigns_tick(now=START)
    for call in Call.objects.filter(to_e164__in=[person["phone"] for person in people], ended_at__isnull=True):
        end_call(call, status=status, when=LATER)
    campaigns_tick(now=LATER)
    return campaign


def test_the_export_holds_the_callers_contacts_with_consent_outcomes_attempts_and_the_blocklist(
        clock, numbers, tenant_a, api_a):
    spring = called(tenant_a, [{"phone": CALLER, "name": "Anna Beispiel", "variables": {"Vorname": "Anna"},
                                **CONSENT}, {"phone": OTHER, "name": "Bernd", **CONSENT}])
    reminder, _ = campaign_of(tenant_a, [{"phone": CALLER_NATIONAL}], purpose="service", name="Terminerinnerung")
    blocklist_add(tenant=tenant_a, phone=CALLER, note="Beschwerde per Brief")
    call = Call.objects.get(to_e164=CALLER)

    document = export(api_a, CALLER_NATIONAL)

    contacts = sorted(document["campaignContacts"], key=lambda contact: contact["campaign"]["name"])
    assert [(c["campaign"]["name"], c["campaign"]["purpose"], c["outcome"]) for c in contacts] == [
        ("Frühjahrsaktion", "marketing", "reached"), ("Terminerinnerung", "service", "skipped_blocklist")]
    first = contacts[0]
    assert (first["campaign"]["id"], first["phone"], first["name"], first["variables"]) == (
        spring.pk, CALLER, "Anna Beispiel", {"Vorname": "Anna"})
    assert first["consent"] == {"source": CONSENT["consentSource"], "at": "2025-02-01T09:00:00Z",
                                "text": CONSENT["consentText"]}
    assert [(a["number"], a["call"], a["state"], a["outcome"]) for a in first["attempts"]] == [
        (1, call.pk, "ended", "reached")]
    assert contacts[1]["campaign"]["id"] == reminder.pk and contacts[1]["attempts"] == []
    assert [(e["reason"], e["note"], e["erasedAt"]) for e in document["blocklist"]] == [
        ("manual", "Beschwerde per Brief", None)]
    # The other contact of the campaign is not the caller's.
    assert "Bernd" not in str(document)


def test_an_export_says_why_the_number_is_blocked_an_opt_out(clock, numbers, tenant_a, api_a):
    called(tenant_a, [{"phone": CALLER}], purpose="service")
    call = Call.objects.get(to_e164=CALLER)
    opt_out(tenant=tenant_a, phone=CALLER, call_id=call.pk)

    document = export(api_a, CALLER)

    assert [(e["reason"], e["call"]) for e in document["blocklist"]] == [("opt_out", call.pk)]


@pytest.mark.parametrize("objection", ["opt_out", "manual"])
def test_an_erased_caller_on_the_blocklist_is_never_called_again(clock, numbers, tenant_a, api_a, objection):
    called(tenant_a, [{"phone": CALLER, **CONSENT}])
    call_id = Call.objects.get(to_e164=CALLER).pk
    if objection == "opt_out":
        opt_out(tenant=tenant_a, phone=CALLER, call_id=call_id, note="Frau Beispiel will keine Anrufe")
    else:
        blocklist_add(tenant=tenant_a, phone=CALLER, note="Beschwerde von Frau Beispiel")

    counts = erase(api_a, {"phone": CALLER_NATIONAL})

    assert (counts["campaignContacts"], counts["blocklistEntries"]) == (1, 1)
    assert copies_of_number(CALLER) == set()
    pseudonym = pseudonym_for(tenant=tenant_a, e164=CALLER)
    # The blocklist still finds it by the number, and a new entry of the number is that
    # entry (the number is not written back into it).
    listed = api_a.get("/v2/blocklist", {"phone": "+49 176 1234567"}).json()["blocklist"]
    assert [(e["phone"], e["reason"], e["note"], e["erasedAt"]) for e in listed] == [
        (pseudonym, objection, "", "2025-03-03T09:00:00Z")]
    again = api_a.post("/v2/blocklist", {"phone": CALLER, "note": "Frau Beispiel"}, format="json")
    assert again.status_code == 200 and again.json()["id"] == listed[0]["id"]
    assert again.json()["phone"] == pseudonym
    assert api_a.post("/v2/blocklist", {"phone": CALLER, "reason": "opt_out"}, format="json").status_code == 200
    # What the export by number now finds is kept without the number: the objection,
    # and the proof of the consent the caller was called under.
    document = export(api_a, CALLER)
    assert [(e["reason"], e["erasedAt"]) for e in document["blocklist"]] == [("opt_out", "2025-03-03T09:00:00Z")]
    assert [(c["phone"], c["name"], c["consent"]["text"]) for c in document["campaignContacts"]] == [
        (pseudonym, "", CONSENT["consentText"])]
    # That export names the number it was asked for; nothing else does.
    assert {table for table, _, _ in copies_of_number(CALLER)} == {"privacy_app_export"}
    assert BlockedNumber.objects.count() == 1

    # A new list with the number (the tenant's new data): stored as skipped, never called.
    campaign, report = campaign_of(tenant_a, [{"phone": "0176 123 45 67", **CONSENT}], name="Sommeraktion")
    campaigns_tick(now=LATER)

    assert report["skippedBlocklist"] == 1 and report["added"] == 0
    contact = CampaignContact.objects.get(campaign=campaign)
    assert (contact.status, contact.outcome) == ("done", "skipped_blocklist")
    assert list(Call.objects.filter(to_e164=CALLER)) == []


def test_an_erased_entry_blocks_the_scheduler_too(clock, numbers, tenant_a, api_a):
    """The scheduler matches the pseudonym as well as the upload does (a waiting contact
    of an erased number: the erasure ends them all, so it is written by hand here)."""
    blocklist_add(tenant=tenant_a, phone=CALLER)
    erase(api_a, {"phone": CALLER})
    campaign, _ = campaign_of(tenant_a, [{"phone": OTHER}], purpose="service")
    CampaignContact.objects.filter(campaign=campaign).update(phone=CALLER)

    campaigns_tick(now=START)

    assert CampaignContact.objects.get(campaign=campaign).outcome == "skipped_blocklist"
    assert not Call.objects.filter(to_e164=CALLER).exists()


def test_open_contacts_end_erased_and_a_claimed_attempt_is_never_dialled(clock, numbers, tenant_a, api_a,
                                                                         receivers):
    endpoint_create(tenant=tenant_a, url=receivers[0].url, event_types=list(EVENT_TYPES))
    waiting, _ = campaign_of(tenant_a, [{"phone": CALLER, "name": "Anna", **CONSENT}], name="Wartend",
                             start_at=START + dt.timedelta(days=1))
    claiming, _ = campaign_of(tenant_a, [{"phone": CALLER, **CONSENT}], name="Gewählt")
    assert len(campaign_step(campaign_id=claiming.pk, now=START)) == 1
    attempt = CampaignAttempt.objects.get()
    assert (attempt.state, UsageCounter.objects.get(tenant=tenant_a).reserved_minutes) == ("claimed", 2)

    erase(api_a, {"phone": CALLER})
    campaigns_tick(now=LATER)

    attempt.refresh_from_db()
    assert (attempt.state, attempt.outcome) == ("ended", "erased")
    assert attempt.call.status == "failed" and not SimDial.objects.exists()
    assert UsageCounter.objects.get(tenant=tenant_a).reserved_minutes == 0
    for campaign in (waiting, claiming):
        contact = CampaignContact.objects.get(campaign=campaign)
        assert (contact.status, contact.outcome, contact.redacted, contact.name) == ("done", "erased", True, "")
        # Never called under it: its consent is not kept.
        assert (contact.consent_source, contact.consent_at, contact.consent_text) == ("", None, "")
    # Each contact's completion was announced, without a number.
    completed = Delivery.objects.filter(event_type="campaign.contact.completed")
    assert sorted(d.payload.count('"phone":null') for d in completed) == [1, 1]
    assert copies_of_number(CALLER) == set()
    assert api_a.get(f"/v2/campaigns/{waiting.pk}").json()["counts"]["erased"] == 1


def test_an_attempt_a_worker_won_before_the_erasure_is_not_dialled_nor_sent_again(
        clock, numbers, tenant_a, api_a, settings):
    campaign, _ = campaign_of(tenant_a, [{"phone": CALLER}, {"phone": OTHER}], purpose="service", concurrency=2)
    first, second = (CampaignAttempt.objects.get(pk=pk) for pk in campaign_step(campaign_id=campaign.pk, now=START))
    # Both won by a worker (claimed → dialing); the first's dial not yet sent, the
    # second's sent without an answer (the worker died).
    CampaignAttempt.objects.filter(pk__in=[first.pk, second.pk]).update(state="dialing", dial_started_at=START)
    erase(api_a, {"phone": CALLER})
    erase(api_a, {"phone": OTHER})

    _send(first.pk, START)
    assert dials_resend(now=START + dt.timedelta(seconds=settings.CAMPAIGN_DIAL_LEASE_SEC + 1)) == 0

    assert not SimDial.objects.exists()
    first.refresh_from_db()
    assert (first.state, first.outcome, first.call.status) == ("ended", "erased", "failed")
    second.refresh_from_db()
    assert second.state == "dialing" and second.dials == 0


def test_the_kept_consent_proof_goes_after_its_five_years(clock, numbers, tenant_a, api_a):
    called(tenant_a, [{"phone": CALLER, **CONSENT}])
    erase(api_a, {"phone": CALLER})
    contact = CampaignContact.objects.get()
    assert contact.consent_at is not None and contact.consent_text

    assert contacts_redact_expired(now=START + dt.timedelta(days=4 * 365)) == 0
    assert contacts_redact_expired(now=START + dt.timedelta(days=5 * 366 + 1)) == 1

    contact.refresh_from_db()
    assert (contact.phone, contact.consent_source, contact.consent_at, contact.consent_text) == ("", "", None, "")
    assert contacts_redact_expired(now=START + dt.timedelta(days=5 * 366 + 2)) == 0


def test_an_erasure_by_call_leaves_the_campaigns_alone(clock, numbers, tenant_a, api_a):
    called(tenant_a, [{"phone": CALLER, "name": "Anna", **CONSENT}])
    opt_out(tenant=tenant_a, phone=CALLER)

    counts = erase(api_a, {"callId": Call.objects.get(to_e164=CALLER).pk})

    assert (counts["calls"], counts["campaignContacts"], counts["blocklistEntries"]) == (1, 0, 0)
    assert CampaignContact.objects.get().phone == CALLER and BlockedNumber.objects.get().phone == CALLER
    document = export(api_a, CALLER)
    assert len(document["campaignContacts"]) == 1 and document["calls"] == []


def test_the_blocklist_of_another_tenant_is_untouched(clock, numbers, tenant_a, tenant_b, api_a, api_b):
    blocklist_add(tenant=tenant_a, phone=CALLER)
    blocklist_add(tenant=tenant_b, phone=CALLER)

    erase(api_a, {"phone": CALLER})

    assert BlockedNumber.objects.get(tenant=tenant_b).phone == CALLER
    assert api_b.get("/v2/blocklist", {"phone": CALLER}).json()["blocklist"][0]["erasedAt"] is None
