"""Every write of a lead goes through leads_app's services and is announced like the
API's: the admin's change form (status, notes) and a repeat post folded into an open
lead both publish `lead.updated`; the event carries how often the number posted."""
import json

import pytest
from django.test import Client

from console.audit.models import AuditEntry
from leads_app.models import Lead
from leads_app.services import lead_create, lead_receive
from tests.conftest import make_client
from tests.leads_app.helpers import lead_with, post_lead
from webhooks_app.models import Delivery
from webhooks_app.services import endpoint_create

pytestmark = pytest.mark.django_db

MOBILE = "+491712345678"


@pytest.fixture
def crm(tenant_a):
    """An endpoint of tenant A that hears both lead events (nothing is sent in the
    test: the deliveries are the rows the transaction left)."""
    endpoint, _secret = endpoint_create(tenant=tenant_a, url="https://crm.example/hooks",
                                        event_types=["lead.created", "lead.updated"])
    return endpoint


def events(event_type):
    return [json.loads(delivery.payload) for delivery in
            Delivery.objects.filter(event_type=event_type).order_by("created_at", "id")]


def change_form(user, lead, **fields):
    client = Client()
    client.force_login(user)
    response = client.post(f"/admin/leads_app/lead/{lead.pk}/change/", {"status": lead.status, "notes": lead.notes,
                                                                        **fields, "_save": "1"})
    assert response.status_code == 302, response.content.decode()[:2000]
    return response


def test_a_status_changed_in_the_admins_change_form_is_announced(teammate, tenant_a, crm):
    lead = lead_create(tenant=tenant_a, kind="callback", phone=MOBILE)
    change_form(teammate, lead, status="contacted", notes="Ruft nach 17 Uhr zurück")
    lead.refresh_from_db()
    assert (lead.status, lead.notes) == ("contacted", "Ruft nach 17 Uhr zurück")
    [event] = events("lead.updated")
    assert event["type"] == "lead.updated"
    assert event["data"]["id"] == lead.pk and event["data"]["status"] == "contacted"
    assert "notes" not in event["data"]  # the operator's notes stay in the console
    # Times as the API writes them (UTC), not in the zone the admin request activated.
    assert event["data"]["created_at"].endswith("Z")


def test_notes_alone_are_saved_through_the_service_and_announce_nothing(teammate, tenant_a, crm):
    lead = lead_create(tenant=tenant_a, kind="callback", phone=MOBILE)
    change_form(teammate, lead, notes="Mailbox, morgen erneut")
    lead.refresh_from_db()
    assert lead.notes == "Mailbox, morgen erneut" and lead.status == "new"
    assert events("lead.updated") == []


def test_the_admins_change_form_records_the_change_in_the_audit_trail(teammate, tenant_a, crm):
    lead = lead_create(tenant=tenant_a, kind="callback", phone=MOBILE)
    change_form(teammate, lead, status="lost")
    assert AuditEntry.objects.filter(action="admin.change leads_app.lead", object_id=lead.pk).exists()


def test_a_repeat_post_folded_into_an_open_lead_is_announced_with_its_count(tenant_a, crm):
    first = lead_receive(tenant=tenant_a, kind="callback", phone=MOBILE)
    [created] = events("lead.created")
    assert created["data"]["repeat_count"] == 0 and created["data"]["repeated_at"] is None
    again = lead_receive(tenant=tenant_a, kind="callback", phone=MOBILE)
    third = lead_receive(tenant=tenant_a, kind="callback", phone=MOBILE)
    assert first.pk == again.pk == third.pk and Lead.objects.count() == 1
    updates = events("lead.updated")
    assert [event["data"]["repeat_count"] for event in updates] == [1, 2]
    assert all(event["data"]["id"] == first.pk and event["data"]["repeated_at"] for event in updates)


def test_a_repeat_post_through_the_public_api_is_announced(tenant_a, crm):
    client = make_client()
    for _ in range(2):
        response = post_lead(client, lead_with(preferred_at=None), HTTP_ORIGIN="https://acme.example")
        assert response.status_code == 201
    [update] = events("lead.updated")
    assert update["data"]["id"] == response.json()["id"] and update["data"]["repeat_count"] == 1
