"""The API-key page: a "Widerrufen" button, and no hard delete of a key that was used."""
import pytest
from django.contrib.admin.utils import quote
from django.test import Client
from django.utils import timezone

from console.credentials.models import ApiKey
from console.credentials.services import api_key_create

pytestmark = pytest.mark.django_db


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


def change_url(key):
    return f"/admin/credentials/apikey/{quote(key.pk)}/change/"


def test_the_owner_revokes_a_key_with_the_button(owner, tenant_a):
    key, _raw = api_key_create(tenant=tenant_a, name="crm")
    client = logged_in(owner)
    assert 'value="Widerrufen"' in client.get(change_url(key)).content.decode()
    client.post(change_url(key), {"name": "crm", "_revoke": "1"})
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert 'value="Widerrufen"' not in client.get(change_url(key)).content.decode()


def test_a_used_key_cannot_be_deleted_but_an_unused_one_can(owner, tenant_a):
    used, _raw = api_key_create(tenant=tenant_a, name="used")
    ApiKey.objects.filter(pk=used.pk).update(last_used_at=timezone.now())
    unused, _raw = api_key_create(tenant=tenant_a, name="unused")
    client = logged_in(owner)
    delete = "/admin/credentials/apikey/{}/delete/"
    assert client.post(delete.format(quote(used.pk)), {"post": "yes"}).status_code == 403
    assert client.post(delete.format(quote(unused.pk)), {"post": "yes"}).status_code == 302
    assert list(ApiKey.objects.values_list("name", flat=True)) == ["used"]
    assert "delete_selected" not in client.get("/admin/credentials/apikey/").content.decode()
