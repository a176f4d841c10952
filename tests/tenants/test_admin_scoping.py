"""A staff member who is not a superuser sees only their tenants and their data."""
import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from console.assistants.models import Assistant
from console.credentials.models import ApiKey
from console.credentials.services import api_key_create
from console.numbers.models import PhoneNumber
from console.tenants.models import Tenant

pytestmark = pytest.mark.django_db

APPS = ["tenants", "credentials", "assistants", "numbers"]


@pytest.fixture
def data(tenant_a, tenant_b):
    a = Assistant.objects.create(tenant=tenant_a, name="Acme-Empfang")
    b = Assistant.objects.create(tenant=tenant_b, name="Globex-Empfang")
    PhoneNumber.objects.create(tenant=tenant_a, e164="+493012345678", label="acme-zentrale", assistant=a)
    PhoneNumber.objects.create(tenant=tenant_b, e164="+494012345678", label="globex-zentrale", assistant=b)
    api_key_create(tenant=tenant_a, name="acme-crm")
    api_key_create(tenant=tenant_b, name="globex-crm")
    return {"a": a, "b": b}


def admin_client(user):
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=APPS))
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("url, mine, foreign", [
    ("/admin/tenants/tenant/", "acme", "globex"),
    ("/admin/assistants/assistant/", "Acme-Empfang", "Globex-Empfang"),
    ("/admin/numbers/phonenumber/", "acme-zentrale", "globex-zentrale"),
    ("/admin/credentials/apikey/", "acme-crm", "globex-crm"),
])
def test_member_sees_only_own_tenants_objects(owner, data, url, mine, foreign):
    page = admin_client(owner).get(url).content.decode()
    assert mine in page
    assert foreign not in page


def test_member_gets_404_for_a_foreign_objects_page(owner, data):
    client = admin_client(owner)
    assert client.get(f"/admin/assistants/assistant/{data['b'].pk}/change/").status_code == 302  # "does not exist" redirect
    assert client.get(f"/admin/assistants/assistant/{data['a'].pk}/change/").status_code == 200
    tenant_b = Tenant.objects.get(slug="globex")
    assert client.get(f"/admin/tenants/tenant/{tenant_b.pk}/change/").status_code == 302


def test_member_can_only_pick_own_tenant_in_forms(owner, data):
    page = admin_client(owner).get("/admin/assistants/assistant/add/").content.decode()
    assert "Acme (acme)" in page
    assert "Globex (globex)" not in page


def test_superuser_sees_all_tenants(data, django_user_model):
    root = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(root)
    page = client.get("/admin/assistants/assistant/").content.decode()
    assert "Acme-Empfang" in page and "Globex-Empfang" in page


def test_admin_creates_an_api_key_and_shows_it_once(owner, tenant_a):
    client = admin_client(owner)
    response = client.post("/admin/credentials/apikey/add/", {"tenant": tenant_a.pk, "name": "from admin"})
    assert response.status_code == 200
    api_key = ApiKey.objects.get(name="from admin")
    raw_key = response.context["raw_key"]
    assert raw_key in response.content.decode()
    assert raw_key.startswith(api_key.prefix + "_")
    # Stored only as a hash; the list and detail pages never show it again.
    assert raw_key not in (api_key.key_hash, api_key.prefix)
    assert raw_key not in client.get("/admin/credentials/apikey/").content.decode()
    assert raw_key not in client.get(f"/admin/credentials/apikey/{api_key.pk}/change/").content.decode()


def test_member_cannot_create_a_key_for_a_foreign_tenant(owner, tenant_b):
    response = admin_client(owner).post("/admin/credentials/apikey/add/", {"tenant": tenant_b.pk, "name": "sneaky"})
    assert response.status_code == 200
    assert not ApiKey.objects.filter(name="sneaky").exists()
    assert "Select a valid choice" in response.content.decode()


def test_admin_revokes_keys(owner, data):
    api_key = ApiKey.objects.get(name="acme-crm")
    admin_client(owner).post("/admin/credentials/apikey/", {"action": "revoke", "_selected_action": [api_key.pk]})
    api_key.refresh_from_db()
    assert api_key.revoked_at is not None


def test_admin_number_form_normalises_to_e164(owner, tenant_a):
    response = admin_client(owner).post("/admin/numbers/phonenumber/add/", {
        "tenant": tenant_a.pk, "e164": "030 98765432", "label": "admin", "assistant": ""})
    assert response.status_code == 302
    assert PhoneNumber.objects.get(label="admin").e164 == "+493098765432"


def test_member_sees_only_memberships_of_own_tenants(owner, teammate, outsider):
    page = admin_client(owner).get("/admin/tenants/membership/").content.decode()
    assert "olga-owner" in page and "tom-teammate" in page
    assert "otto-outsider" not in page
