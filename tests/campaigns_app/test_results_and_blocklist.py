"""The results export (formulas neutralised), the counts in GET /v2/campaigns/{id},
the blocklist API and opt_out, retention of contacts, and the admin's progress bar."""
import csv
import io
from datetime import timedelta

import pytest
from django.test import Client

from campaigns_app.models import BlockedNumber, CampaignContact
from campaigns_app.retention import contacts_redact_expired
from campaigns_app.services import opt_out
from tests.campaigns_app.conftest import TUESDAY_10, contacts, end_call, minutes, open_calls, tick
from tests.conftest import error_of

pytestmark = pytest.mark.django_db


def test_the_results_export_neutralises_formulas(api_a, make_campaign):
    campaign = make_campaign(people=[{"phone": "0176 11122233", "name": '=HYPERLINK("http://evil","klick")'},
                                     {"phone": "0176 44455566", "name": "@SUM(A1)", "variables": {"x": "+1"}}],
                             concurrency=2)
    tick(TUESDAY_10)
    end_call(open_calls(campaign.tenant)[0], when=TUESDAY_10 + minutes(1))
    tick(TUESDAY_10 + minutes(1))

    response = api_a.get(f"/v2/campaigns/{campaign.pk}/results.csv", HTTP_ACCEPT="text/csv")

    assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
    text = b"".join(response.streaming_content).decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))
    assert [row["name"] for row in rows] == ["'=HYPERLINK(\"http://evil\",\"klick\")", "'@SUM(A1)"]
    assert [row["phone"] for row in rows] == ["'+4917611122233", "'+4917644455566"]
    assert {row["outcome"] for row in rows} == {"reached", ""}
    assert all(row["calls"].startswith("cl_") for row in rows)


def test_the_export_of_another_tenants_campaign_is_404_in_json(api_b, make_campaign):
    campaign = make_campaign(people=contacts(1))

    response = api_b.get(f"/v2/campaigns/{campaign.pk}/results.csv", HTTP_ACCEPT="text/csv")

    assert response.status_code == 404 and error_of(response)["code"] == "not_found"


def test_the_campaign_shows_its_counts_by_outcome(api_a, make_campaign):
    campaign = make_campaign(people=contacts(3), concurrency=3, max_attempts=1)
    tick(TUESDAY_10)
    first, second, _ = open_calls(campaign.tenant)
    end_call(first, when=TUESDAY_10 + minutes(1))
    end_call(second, status="busy", when=TUESDAY_10 + minutes(1))
    tick(TUESDAY_10 + minutes(1))

    body = api_a.get(f"/v2/campaigns/{campaign.pk}").json()

    assert body["counts"] == {"total": 3, "pending": 0, "calling": 1, "done": 2, "reached": 1, "voicemail": 0,
                              "no_answer": 0, "busy": 1, "failed": 0, "opted_out": 0, "skipped_blocklist": 0,
                              "skipped_no_consent": 0, "erased": 0}
    assert body["progress"] == 66 and body["state"] == "running"


def test_the_blocklist_api_adds_once_and_keeps_opt_outs(api_a, bavarian):
    first = api_a.post("/v2/blocklist", {"phone": "0176 11122233", "note": "Beschwerde"}, format="json")
    again = api_a.post("/v2/blocklist", {"phone": "+49 176 11122233"}, format="json")
    opted = api_a.post("/v2/blocklist", {"phone": "0176 44455566", "reason": "opt_out"}, format="json")

    assert (first.status_code, again.status_code, opted.status_code) == (201, 200, 201)
    assert first.json()["phone"] == "+4917611122233" and first.json()["id"] == again.json()["id"]
    listed = api_a.get("/v2/blocklist?phone=0176%2044455566").json()
    assert [entry["reason"] for entry in listed["blocklist"]] == ["opt_out"]
    assert api_a.delete(f"/v2/blocklist/{first.json()['id']}").status_code == 204
    kept = api_a.delete(f"/v2/blocklist/{opted.json()['id']}")
    assert kept.status_code == 409 and error_of(kept)["code"] == "opt_out_kept"
    bad = api_a.post("/v2/blocklist", {"phone": "keine"}, format="json")
    assert bad.status_code == 400 and "phone" in error_of(bad)["details"]


def test_opt_out_blocks_the_number_for_every_campaign_of_the_tenant_only(make_campaign, tenant_b):
    campaign = make_campaign(people=contacts(2))

    entry = opt_out(tenant=campaign.tenant, phone=contacts(1)[0]["phone"], call_id="cl_x")

    assert (entry.reason, entry.call_id) == ("opt_out", "cl_x")
    assert CampaignContact.objects.get(phone=entry.phone).outcome == "opted_out"
    assert not BlockedNumber.objects.for_tenant(tenant_b).exists()


def test_retention_keeps_consent_five_years_and_other_contacts_180_days(make_campaign, bavarian):
    consent = {"consentSource": "Webformular", "consentAt": "2026-10-01T10:00:00+02:00", "consentText": "Ja"}
    campaign = make_campaign(people=[{"phone": "0176 11122233", **consent}, {"phone": "0176 44455566"}],
                             purpose="service", start=False)
    from campaigns_app.services import campaign_transition

    campaign_transition(campaign=campaign, change="cancel")
    CampaignContact.objects.update(created_at=TUESDAY_10)

    assert contacts_redact_expired(now=TUESDAY_10 + timedelta(days=179)) == 0
    assert contacts_redact_expired(now=TUESDAY_10 + timedelta(days=181)) == 1
    assert contacts_redact_expired(now=TUESDAY_10 + timedelta(days=4 * 365)) == 0
    assert contacts_redact_expired(now=TUESDAY_10 + timedelta(days=5 * 366 + 60)) == 1
    assert list(CampaignContact.objects.values_list("phone", "redacted")) == [("", True), ("", True)]


def test_the_admin_shows_progress_and_counts_in_german(owner, make_campaign):
    campaign = make_campaign(people=contacts(2), concurrency=2, max_attempts=1)
    tick(TUESDAY_10)
    end_call(open_calls(campaign.tenant)[0], status="no-answer", when=TUESDAY_10 + minutes(1))
    tick(TUESDAY_10 + minutes(1))
    client = Client()
    client.force_login(owner)

    page = client.get("/admin/campaigns_app/campaign/").content.decode()

    assert '<progress value="50" max="100"' in page and "1 / 2" in page
    assert "Kampagnen" in page and "Läuft" in page and "Keine Antwort: 1" in page
    change = client.get(f"/admin/campaigns_app/campaign/{campaign.pk}/change/").content.decode()
    assert "Anrufzeiten" in change and "Gleichzeitige Anrufe" in change
