"""API keys verified a moment ago, per process: reads skip the key's query.

Authenticating a key costs one query (the key with its tenant). A read (GET, HEAD,
OPTIONS) may take a key that this process verified less than
`settings.API_KEY_CACHE_SECONDS` ago (default 2) without asking the database again.
Writes always ask it. The bound this gives, whatever process revoked the key (another
app server, the admin, a shell):

- a revoked key is refused by every process at most API_KEY_CACHE_SECONDS after its
  revocation committed, on reads; on writes at once;
- revoking it with `api_key_revoke`, or saving the key or its tenant, in this process
  forgets it here at once.

The entry's age counts from before the query that verified it, so an entry made from
a row read just before a revocation still expires within the bound. The tenant comes
with the key, so a read sees a tenant's settings as they were at most that long ago
(writes read them fresh). 0 turns the cache off.

Entries are keyed by the SHA-256 of the whole key, which is already computed to
verify it: a lookup compares digests, never the key. Every request gets copies of the
key and its tenant, so what one request changes on them no other request sees.
"""
import time

from django.conf import settings
from django.db.models.base import ModelState

# More distinct keys than this within the bound is not a workload we cache for; the
# entries are dropped rather than grown without limit.
MAX_ENTRIES = 10_000


class VerifiedKeys:
    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self._entries = {}  # SHA-256 of the key -> (expiry on `clock`, ApiKey with its tenant)

    def get(self, digest):
        """A copy of the key (with its tenant) verified with this digest within the bound, or None."""
        entry = self._entries.get(digest)
        if entry is None:
            return None
        expires_at, api_key = entry
        if self.clock() >= expires_at:
            self._entries.pop(digest, None)
            return None
        return _copy(api_key)

    def remember(self, digest, api_key, *, verified_at):
        """Keeps `api_key` (with its tenant), read from the database by a query that began at `verified_at`."""
        seconds = settings.API_KEY_CACHE_SECONDS
        if seconds <= 0:
            return
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.clear()
        self._entries[digest] = (verified_at + seconds, _copy(api_key))

    def forget(self, *, key_id=None, tenant_id=None):
        """Drops the entries of a key, or of every key of a tenant."""
        for digest, (_, api_key) in list(self._entries.items()):
            if api_key.pk == key_id or api_key.tenant_id == tenant_id:
                self._entries.pop(digest, None)

    def clear(self):
        self._entries.clear()


def _copy(api_key):
    fresh = _copy_of(api_key)
    fresh.tenant = _copy_of(api_key.tenant)
    return fresh


def _copy_of(instance):
    """A copy of a model instance's field values with a state of its own (no cached
    relations): what copy.copy() makes, in a fifth of its time."""
    fresh = instance.__class__.__new__(instance.__class__)
    fresh.__dict__.update(instance.__dict__)
    fresh._state = ModelState()
    fresh._state.db, fresh._state.adding = instance._state.db, instance._state.adding
    return fresh


verified_keys = VerifiedKeys()


def forget_saved_key(sender, instance, **kwargs):
    """post_save/post_delete of ApiKey: a changed or deleted key is read again."""
    verified_keys.forget(key_id=instance.pk)


def forget_saved_tenant(sender, instance, **kwargs):
    """post_save/post_delete of Tenant: its keys are read again, with the tenant as it is now."""
    verified_keys.forget(tenant_id=instance.pk)
