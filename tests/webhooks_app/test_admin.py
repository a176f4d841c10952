"""Endpoints in the admin: browsed and switched off or on, never added nor pointed
elsewhere there, so the API's checks (URL, port, address, the cap) cannot be passed by."""
import pytest
from django.contrib.admin.utils import quote

from webhooks_app.models import Endpoint
from webhooks_app.services import endpoint_create

pytestmark = pytest.mark.django_db
URL = "https://hooks.acme.example/stimmwerk"


def test_the_admin_adds_no_endpoint(admin_client, tenant_a):
    assert admin_client.get("/admin/webhooks_app/endpoint/add/").status_code == 403
    response = admin_client.post("/admin/webhooks_app/endpoint/add/", {
        "tenant": tenant_a.pk, "url": "https://hooks.acme.example:99999/h", "event_types": '["lead.created"]',
        "active": "on"})
    assert response.status_code == 403 and not Endpoint.objects.exists()


def test_the_admin_switches_an_endpoint_off_but_leaves_its_url_alone(admin_client, tenant_a):
    endpoint, _ = endpoint_create(tenant=tenant_a, url=URL, event_types=["lead.created"])
    page = f"/admin/webhooks_app/endpoint/{quote(endpoint.pk)}/change/"
    response = admin_client.post(page, {"url": "https://[64:ff9b::a9fe:a9fe]:99999/h", "description": "CRM"})
    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.description, endpoint.active) == (URL, "CRM", False)
