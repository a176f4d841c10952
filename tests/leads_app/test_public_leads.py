"""POST /v2/public/leads: fields, phones, tokens, honeypot, size (CONTRACT §6)."""
import zoneinfo
from datetime import datetime, time, timedelta

import pytest

from leads_app.models import Lead
from tests.conftest import error_of
from tests.leads_app.helpers import GOOD_LEAD, lead_with, post_lead

pytestmark = pytest.mark.django_db


def test_valid_lead_is_created_new_with_ld_id(public, tenant_a):
    response = post_lead(public)

    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "status"}
    assert body["id"].startswith("ld_") and body["status"] == "new"
    lead = Lead.objects.get(pk=body["id"])
    assert (lead.tenant, lead.kind, lead.phone) == (tenant_a, "callback", "+491712345678")
    assert lead.page_url == "https://acme.example/kontakt"


@pytest.mark.parametrize("field", ["tenant", "kind", "phone"])
def test_each_required_field_missing_is_a_field_error(public, tenant_a, field):
    response = post_lead(public, lead_with(**{field: None}))

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "validation_error"
    assert list(error["details"]) == [field]
    assert not Lead.objects.exists()


@pytest.mark.parametrize("field", ["preferred_at", "page_url", "consent_version"])
def test_optional_fields_may_be_left_out_or_null(public, tenant_a, field):
    assert post_lead(public, lead_with(**{field: None})).status_code == 201
    body = dict(GOOD_LEAD, **{field: None})
    assert post_lead(public, body).status_code == 201


def test_unknown_kind_is_refused(public, tenant_a):
    response = post_lead(public, lead_with(kind="pizza"))

    assert response.status_code == 400
    assert list(error_of(response)["details"]) == ["kind"]


@pytest.mark.parametrize("kind", ["callback", "contact", "voicemail"])
def test_every_kind_is_accepted(public, tenant_a, kind):
    assert post_lead(public, lead_with(kind=kind)).status_code == 201


@pytest.mark.parametrize("slug", ["nope-tenant", "Acme", "a", 42, ""])
def test_unknown_tenant_is_an_ordinary_field_error(public, tenant_a, slug):
    response = post_lead(public, lead_with(tenant=slug))

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "validation_error"
    assert list(error["details"]) == ["tenant"]


def test_unknown_tenant_answers_like_a_malformed_slug(public, tenant_a):
    """Nothing tells a stranger whether a tenant exists."""
    unknown = error_of(post_lead(public, lead_with(tenant="nope-tenant")))
    malformed = error_of(post_lead(public, lead_with(tenant="NOPE TENANT")))

    assert unknown == malformed


@pytest.mark.parametrize("raw, e164", [
    ("0171 2345678", "+491712345678"),
    ("+49 171 2345678", "+491712345678"),
    ("0049 171 2345678", "+491712345678"),
    ("030 1234567", "+49301234567"),
    ("(030) 123-4567", "+49301234567"),
    ("+43 1 5880000", "+4315880000"),
])
def test_phone_is_stored_in_e164(public, tenant_a, raw, e164):
    response = post_lead(public, lead_with(phone=raw))

    assert response.status_code == 201
    assert Lead.objects.get(pk=response.json()["id"]).phone == e164


@pytest.mark.parametrize("phone", [
    "abc",  # letters
    "0171 CALLME",  # letters among digits
    "12",  # too short
    "0171",  # too short for a German mobile number
    "+49 171 23456789012345",  # too long
    "020 7946 0958",  # a British national format, read as German: no such number
    "+49 12345",  # no German number is that short
    "+1 555 0100",  # not a valid number of its country
    "",
    17123456789,  # not a string
])
def test_bad_phone_is_a_field_error(public, tenant_a, phone):
    response = post_lead(public, lead_with(phone=phone))

    assert response.status_code == 400
    error = error_of(response)
    assert list(error["details"]) == ["phone"]
    assert not Lead.objects.exists()


@pytest.mark.parametrize("token", ["asap", "+1m", "+90m", "+2h", "+168h", "today-am", "today-pm", "tomorrow-am",
                                   "tomorrow-pm"])
def test_every_valid_token_is_accepted_and_kept_beside_its_resolved_time(public, api_a, tenant_a, token):
    created = post_lead(public, lead_with(preferred_at=token))

    assert created.status_code == 201
    lead = api_a.get(f"/v2/leads/{created.json()['id']}").json()
    assert lead["preferred_at"] == token
    resolved = datetime.fromisoformat(lead["preferred_at_resolved"])
    assert resolved >= datetime.fromisoformat(lead["created_at"]) - timedelta(seconds=1)


@pytest.mark.parametrize("token", ["whenever", "soon", "+0m", "+5", "+5d", "+-5m", "+05m", "+10081m", "+169h",
                                   "ASAP", "tomorrow", "today-evening", "2030-01-01T10:00:00Z", "", 5])
def test_invalid_token_is_a_field_error(public, tenant_a, token):
    response = post_lead(public, lead_with(preferred_at=token))

    assert response.status_code == 400
    assert list(error_of(response)["details"]) == ["preferred_at"]


def test_day_part_token_resolves_on_the_tenants_clock(public, api_a, tenant_a):
    tenant_a.time_zone = "America/New_York"
    tenant_a.save(update_fields=["time_zone"])

    created = post_lead(public, lead_with(preferred_at="tomorrow-pm"))

    lead = api_a.get(f"/v2/leads/{created.json()['id']}").json()
    new_york = zoneinfo.ZoneInfo("America/New_York")
    resolved = datetime.fromisoformat(lead["preferred_at_resolved"]).astimezone(new_york)
    asked = datetime.fromisoformat(lead["created_at"]).astimezone(new_york)
    assert resolved.date() == asked.date() + timedelta(days=1)
    assert resolved.time() == time(14, 0)


@pytest.mark.parametrize("url", ["javascript:alert(1)", "ftp://acme.example/file", "data:text/html,hi",
                                 "acme.example/kontakt", "https://", 12])
def test_page_url_must_be_http_or_https(public, tenant_a, url):
    response = post_lead(public, lead_with(page_url=url))

    assert response.status_code == 400
    assert list(error_of(response)["details"]) == ["page_url"]


def test_the_consent_version_the_visitor_saw_is_kept_with_the_lead(public, api_a, tenant_a):
    response = post_lead(public, dict(GOOD_LEAD, consent_version="callback-de-1"))

    assert response.status_code == 201
    assert Lead.objects.get().consent_version == "callback-de-1"
    assert api_a.get(f"/v2/leads/{response.json()['id']}").json()["consent_version"] == "callback-de-1"


def test_a_lead_without_a_consent_version_shows_null(public, api_a, tenant_a):
    lead_id = post_lead(public).json()["id"]
    assert api_a.get(f"/v2/leads/{lead_id}").json()["consent_version"] is None


@pytest.mark.parametrize("version", ["", "v 1", "x" * 41, 1, True, "<script>"])
def test_a_malformed_consent_version_is_a_field_error(public, tenant_a, version):
    response = post_lead(public, dict(GOOD_LEAD, consent_version=version))

    assert response.status_code == 400
    assert list(error_of(response)["details"]) == ["consent_version"]
    assert not Lead.objects.exists()


def test_unknown_fields_are_ignored(public, tenant_a):
    response = post_lead(public, dict(GOOD_LEAD, status="converted", id="ld_mine", name="Erika"))

    assert response.status_code == 201
    lead = Lead.objects.get()
    assert lead.status == "new" and lead.id != "ld_mine"


def test_all_field_errors_come_together(public, tenant_a):
    response = post_lead(public, {"tenant": "acme", "kind": "pizza", "phone": "abc", "preferred_at": "later"})

    assert set(error_of(response)["details"]) == {"kind", "phone", "preferred_at"}


@pytest.mark.parametrize("body", [[GOOD_LEAD], "lead", 5])
def test_body_that_is_not_an_object_is_a_400(public, tenant_a, body):
    response = post_lead(public, body)

    assert response.status_code == 400
    error_of(response)


def test_malformed_json_is_a_400(public, tenant_a):
    response = public.post("/v2/public/leads", "{not json", content_type="application/json")

    assert response.status_code == 400
    assert error_of(response)["code"] == "malformed_json"


def test_form_encoded_body_is_unsupported(public, tenant_a):
    response = public.post("/v2/public/leads", {"tenant": "acme"})

    assert response.status_code == 415
    assert error_of(response)["code"] == "unsupported_media_type"


def test_body_over_the_size_limit_is_413_and_stores_nothing(public, tenant_a):
    response = post_lead(public, dict(GOOD_LEAD, padding="x" * 10_000))

    assert response.status_code == 413
    assert error_of(response)["code"] == "payload_too_large"
    assert not Lead.objects.exists()


def test_filled_honeypot_answers_201_and_stores_nothing(public, tenant_a):
    response = post_lead(public, dict(GOOD_LEAD, website="http://spam.example"))

    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "status"} and body["id"].startswith("ld_") and body["status"] == "new"
    assert not Lead.objects.exists()


def test_empty_honeypot_is_a_real_lead(public, tenant_a):
    assert post_lead(public, dict(GOOD_LEAD, website="")).status_code == 201
    assert Lead.objects.count() == 1


def test_lead_belongs_only_to_the_tenant_named_in_the_body(public, api_a, api_b, tenant_a, tenant_b):
    post_lead(public, lead_with(tenant="globex"))

    assert api_a.get("/v2/leads").json() == {"leads": [], "next": None}
    assert len(api_b.get("/v2/leads").json()["leads"]) == 1


@pytest.mark.parametrize("method", ["get", "put", "patch", "delete"])
def test_other_methods_are_405(public, tenant_a, method):
    response = getattr(public, method)("/v2/public/leads")

    assert response.status_code == 405
    assert error_of(response)["code"] == "method_not_allowed"
