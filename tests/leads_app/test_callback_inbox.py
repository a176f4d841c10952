"""The callback inbox in the admin: ordered by the caller's preferred time with due
and overdue ones marked, one-click status changes, "Rückruf starten" through the
voice runtime (cap checked), and nothing of another tenant."""
import datetime as dt
import re

import pytest
from django.contrib.admin.utils import quote, unquote
from django.test import Client
from django.utils import timezone

from calls_app.models import Call
from leads_app.models import Lead

pytestmark = pytest.mark.django_db


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


def lead(tenant, phone, *, preferred=None, status="new"):
    return Lead.objects.create(tenant=tenant, kind="callback", phone=phone, status=status,
                               preferred_at_resolved=preferred)


def listed(page):
    return [unquote(pk) for pk in re.findall(r'/admin/leads_app/lead/([^/"]+)/change/', page)]


@pytest.fixture
def inbox(tenant_a, tenant_b):
    now = timezone.now()
    return {
        "later": lead(tenant_a, "+491711111111", preferred=now + dt.timedelta(days=2)),
        "overdue": lead(tenant_a, "+491712222222", preferred=now - dt.timedelta(hours=1)),
        "none": lead(tenant_a, "+491713333333"),
        "foreign": lead(tenant_b, "+491719999999", preferred=now - dt.timedelta(hours=3)),
    }


def test_inbox_is_ordered_by_preferred_time_and_marks_overdue(owner, inbox):
    page = logged_in(owner).get("/admin/leads_app/lead/").content.decode()
    assert listed(page) == [inbox["overdue"].pk, inbox["later"].pk, inbox["none"].pk]
    assert "lead-overdue" in page and "überfällig" in page
    overdue_only = logged_in(owner).get("/admin/leads_app/lead/", {"due": "overdue"}).content.decode()
    assert listed(overdue_only) == [inbox["overdue"].pk]


def test_one_click_changes_the_status(teammate, inbox):
    target = inbox["later"]
    response = logged_in(teammate).post("/admin/leads_app/lead/quick-status/", {"set": f"{target.pk}:lost"})
    assert response.status_code == 302
    target.refresh_from_db()
    assert target.status == "lost"


def test_another_tenants_lead_cannot_be_touched(teammate, inbox):
    client = logged_in(teammate)
    foreign = inbox["foreign"]
    assert client.post("/admin/leads_app/lead/quick-status/", {"set": f"{foreign.pk}:lost"}).status_code == 404
    assert client.post(f"/admin/leads_app/lead/{quote(foreign.pk)}/callback/").status_code == 404
    foreign.refresh_from_db()
    assert foreign.status == "new" and not Call.objects.exists()


def test_start_callback_places_a_call_linked_to_the_lead(teammate, inbox):
    target = inbox["overdue"]
    response = logged_in(teammate).post(f"/admin/leads_app/lead/{quote(target.pk)}/callback/", follow=True)
    [call] = Call.objects.all()
    assert (call.direction, call.to_e164, call.lead_id) == ("outbound", target.phone, target.pk)
    assert call.carrier_call_id  # dialled through the (simulated) carrier
    target.refresh_from_db()
    assert target.status == "contacted"
    assert "Rückruf gestartet" in response.content.decode()


def test_start_callback_respects_the_minute_cap(teammate, inbox, tenant_a):
    tenant_a.minute_cap = 0
    tenant_a.save()
    response = logged_in(teammate).post(f"/admin/leads_app/lead/{quote(inbox['later'].pk)}/callback/", follow=True)
    assert not Call.objects.exists()
    assert "Minutenkontingent" in response.content.decode()


def test_starting_a_callback_needs_a_post(teammate, inbox):
    assert logged_in(teammate).get(f"/admin/leads_app/lead/{quote(inbox['later'].pk)}/callback/").status_code == 405
    assert not Call.objects.exists()


def test_the_inbox_exports_its_own_leads(owner, inbox):
    body = b"".join(logged_in(owner).get("/admin/leads_app/lead/export.csv").streaming_content).decode()
    assert inbox["later"].pk in body and inbox["foreign"].pk not in body
