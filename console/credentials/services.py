import hashlib
import hmac
import secrets
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from console.credentials.models import ApiKey
from console.credentials.verified import verified_keys
from console.tenants.models import Tenant

KEY_SCHEME = "swk"
# last_used_at is informative; writing it on every request would serialise
# requests on one row, so it is refreshed at most this often.
LAST_USED_RESOLUTION = timedelta(minutes=5)


def hash_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


def split_key(raw_key: str) -> str | None:
    """The lookup prefix of a well-formed key, else None."""
    parts = raw_key.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_SCHEME or len(parts[1]) != 12 or len(parts[2]) < 40:
        return None
    return f"{parts[0]}_{parts[1]}"


@transaction.atomic
def api_key_create(*, tenant: Tenant, name: str = "", created_by: Any = None) -> tuple[ApiKey, str]:
    """A new key for `tenant`: returns (ApiKey, the raw key to show once)."""
    prefix = f"{KEY_SCHEME}_{secrets.token_hex(6)}"
    raw_key = f"{prefix}_{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.create(
        tenant=tenant, name=name, prefix=prefix, key_hash=hash_key(raw_key), created_by=created_by
    )
    return api_key, raw_key


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    verified_keys.forget(key_id=api_key.pk)
    return api_key


def api_key_authenticate(*, raw_key: str, reuse_verified: bool = False, verified_only: bool = False) -> ApiKey | None:
    """The active key matching `raw_key` with its tenant, or None: one query (the
    prefix is unique, so no ordering), the hashes compared in constant time. The tenant
    comes with the key, so that selecting the key's own tenant needs no query.

    `reuse_verified` (reads only): a key this process verified less than
    API_KEY_CACHE_SECONDS ago needs no query; console/credentials/verified.py states
    the bound on a revoked key. `verified_only`: only such a key, never a query."""
    prefix = split_key(raw_key)
    if prefix is None:
        return None
    digest = hash_key(raw_key)
    if reuse_verified or verified_only:
        api_key = verified_keys.get(digest)
        if api_key is not None or verified_only:
            return api_key
    verified_at = verified_keys.clock()
    try:
        api_key = ApiKey.objects.active().select_related("tenant").get(prefix=prefix)
    except ApiKey.DoesNotExist:
        return None
    if not hmac.compare_digest(api_key.key_hash, digest):
        return None
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
    verified_keys.remember(digest, api_key, verified_at=verified_at)
    return api_key
