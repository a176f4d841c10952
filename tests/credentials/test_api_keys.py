import hashlib
import re

import pytest

from console.credentials.models import ApiKey
from console.credentials.services import api_key_authenticate, api_key_create, api_key_revoke

pytestmark = pytest.mark.django_db


def test_key_is_random_prefixed_and_stored_only_as_hash(tenant_a):
    api_key, raw_key = api_key_create(tenant=tenant_a, name="crm")
    assert re.fullmatch(r"swk_[0-9a-f]{12}_[A-Za-z0-9_\-]{43}", raw_key)
    assert raw_key.startswith(api_key.prefix + "_")
    assert api_key.key_hash == hashlib.sha256(raw_key.encode()).hexdigest()
    stored = ApiKey.objects.filter(pk=api_key.pk).values()[0]
    assert raw_key not in [str(value) for value in stored.values()]
    assert api_key.id.startswith("key_")


def test_two_keys_differ(tenant_a):
    assert api_key_create(tenant=tenant_a)[1] != api_key_create(tenant=tenant_a)[1]


def test_authenticate_finds_the_active_key_only(tenant_a):
    api_key, raw_key = api_key_create(tenant=tenant_a)
    assert api_key_authenticate(raw_key=raw_key) == api_key
    api_key_revoke(api_key=api_key)
    assert api_key_authenticate(raw_key=raw_key) is None


def test_authenticate_records_last_use(tenant_a):
    api_key, raw_key = api_key_create(tenant=tenant_a)
    assert api_key.last_used_at is None
    api_key_authenticate(raw_key=raw_key)
    api_key.refresh_from_db()
    assert api_key.last_used_at is not None
