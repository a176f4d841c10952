"""German first: the admin speaks German unless the browser asks for English, the
JSON API stays English, times show in the tenant's zone and numbers in national
format beside E.164."""
import datetime as dt

import pytest
from django.forms import modelform_factory
from django.test import Client

from calls_app.models import Call, Carrier
from console.tenants.models import Tenant

pytestmark = pytest.mark.django_db


def logged_in(user, **headers):
    client = Client(**headers)
    client.force_login(user)
    return client


def test_admin_is_german_by_default_and_english_on_request(owner):
    german = logged_in(owner).get("/admin/").content.decode()
    assert '<html lang="de"' in german and "Stimmwerk" in german and "Anrufe und Verbrauch" in german
    english = logged_in(owner, HTTP_ACCEPT_LANGUAGE="en").get("/admin/").content.decode()
    assert '<html lang="en"' in english and "Calls and usage" in english


def test_the_api_answers_in_english_whatever_the_browser_speaks(tenant_a):
    response = Client(HTTP_ACCEPT_LANGUAGE="de").get("/v2/leads", HTTP_X_TENANT="acme")
    body = response.json()["error"]
    assert response.status_code == 401 and body["code"] == "unauthenticated"
    assert "Authentication" in body["message"] or "credentials" in body["message"]
    assert "Accept-Language" not in response.get("Vary", "")


def test_call_list_shows_berlin_time_and_the_national_number(owner, tenant_a):
    carrier = Carrier.objects.create(id="sim-test", secret_nonce="n")
    call = Call.objects.create(tenant=tenant_a, carrier=carrier, direction="inbound", from_e164="+4930901820",
                               to_e164="+493055501234", status="completed", seconds=65)
    # 08:00 UTC in November is 09:00 in Berlin.
    Call.objects.filter(pk=call.pk).update(created_at=dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.timezone.utc))
    page = logged_in(owner).get("/admin/calls_app/call/").content.decode()
    assert "23.11.2026 09:00" in page
    assert "030 901820" in page and "+4930901820" in page
    assert "Eingehend" in page and "Beendet" in page and "1:05" in page


def test_times_follow_the_tenants_own_zone(owner, tenant_a):
    tenant_a.time_zone = "America/New_York"
    tenant_a.save()
    carrier = Carrier.objects.create(id="sim-test", secret_nonce="n")
    call = Call.objects.create(tenant=tenant_a, carrier=carrier, direction="outbound", to_e164="+4930901820",
                               status="completed")
    Call.objects.filter(pk=call.pk).update(created_at=dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.timezone.utc))
    assert "23.11.2026 03:00" in logged_in(owner).get("/admin/calls_app/call/").content.decode()


def test_time_zone_is_chosen_from_the_list(tenant_a):
    TenantAdminForm = modelform_factory(Tenant, fields=["time_zone"])
    assert TenantAdminForm().fields["time_zone"].widget.input_type == "select"
    data = {}
    assert not TenantAdminForm({**data, "time_zone": "Mars/Olympus"}, instance=tenant_a).is_valid()
    assert TenantAdminForm({**data, "time_zone": "Europe/Vienna"}, instance=tenant_a).is_valid()
