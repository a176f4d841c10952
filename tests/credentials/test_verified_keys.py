"""The per-process cache of verified API keys (console/credentials/verified.py): reads
within the bound skip the key's query, a revocation elsewhere holds for reads after the
bound and for writes at once, and changes made in this process apply at once.

"Elsewhere" is a revocation written with QuerySet.update(), which, like another process,
sends no signal to this one. The clock of the cache is a fake one the test moves;
tests/credentials/test_revocation_across_processes.py shows the bound between real
server processes."""
import pytest
from django.utils import timezone

from console.credentials.models import ApiKey
from console.credentials.services import api_key_authenticate, api_key_revoke
from console.credentials.verified import verified_keys
from console.tenants.models import Tenant
from tests.conftest import error_of
from tests.queries import assert_query_count

pytestmark = pytest.mark.django_db


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(verified_keys, "clock", fake)
    return fake


@pytest.fixture
def bound(settings):
    settings.API_KEY_CACHE_SECONDS = 2
    return 2


def revoke_elsewhere(tenant):
    ApiKey.objects.filter(tenant=tenant).update(revoked_at=timezone.now())


def test_a_read_within_the_bound_needs_no_query_for_the_key(api_a, clock, bound):
    assert api_a.get("/v2/assistants").status_code == 200
    clock.now += bound - 0.01
    with assert_query_count(1, cached_keys=True):  # the assistants only
        assert api_a.get("/v2/assistants").status_code == 200


def test_a_key_revoked_elsewhere_is_refused_on_reads_once_the_bound_has_passed(api_a, tenant_a, clock, bound):
    assert api_a.get("/v2/usage").status_code == 200
    revoke_elsewhere(tenant_a)
    clock.now += bound - 0.01
    assert api_a.get("/v2/usage").status_code == 200  # still within the bound
    clock.now += 0.01
    response = api_a.get("/v2/usage")
    assert response.status_code == 401 and error_of(response)["code"] == "unauthenticated"


def test_a_key_revoked_elsewhere_is_refused_on_writes_at_once(api_a, tenant_a, clock, bound):
    assert api_a.get("/v2/audio/settings").status_code == 200
    revoke_elsewhere(tenant_a)
    response = api_a.patch("/v2/audio/settings", {"recordingEnabled": True}, format="json")
    assert response.status_code == 401
    assert Tenant.objects.get(pk=tenant_a.pk).recording_enabled is False


def test_the_bound_counts_from_before_the_query_that_verified_the_key(api_a, tenant_a, clock, bound, monkeypatch):
    # The clock moves while the key is being verified; the entry still expires `bound`
    # after the query began, not after it ended.
    real_remember = verified_keys.remember

    def remember_later(digest, api_key, *, verified_at):
        clock.now += 0.5
        real_remember(digest, api_key, verified_at=verified_at)

    monkeypatch.setattr(verified_keys, "remember", remember_later)
    assert api_a.get("/v2/usage").status_code == 200
    revoke_elsewhere(tenant_a)
    clock.now += bound - 0.5
    assert api_a.get("/v2/usage").status_code == 401


def test_revoking_in_this_process_applies_at_once(api_a, tenant_a, clock, bound):
    assert api_a.get("/v2/usage").status_code == 200
    api_key_revoke(api_key=ApiKey.objects.get(tenant=tenant_a))
    assert api_a.get("/v2/usage").status_code == 401


def test_a_tenant_saved_in_this_process_is_read_fresh(api_a, tenant_a, clock, bound):
    assert api_a.get("/v2/usage").json()["minuteCap"] == 10
    tenant = Tenant.objects.get(pk=tenant_a.pk)
    tenant.minute_cap = 77
    tenant.save(update_fields=["minute_cap"])
    assert api_a.get("/v2/usage").json()["minuteCap"] == 77


def test_each_read_gets_its_own_key_and_tenant(api_a, key_a, tenant_a, clock, bound):
    first = api_key_authenticate(raw_key=key_a, reuse_verified=True)
    first.tenant.minute_cap = 5
    first.name = "changed by one request"
    second = api_key_authenticate(raw_key=key_a, reuse_verified=True)
    assert second is not first and second.tenant is not first.tenant
    assert (second.tenant.minute_cap, second.name) == (10, "tests")


def test_without_a_bound_every_read_verifies_the_key(api_a, clock, settings):
    settings.API_KEY_CACHE_SECONDS = 0
    api_a.get("/v2/assistants")
    with assert_query_count(1 + 1, cached_keys=True):
        assert api_a.get("/v2/assistants").status_code == 200


def test_an_unknown_or_wrong_key_is_never_remembered(tenant_a, key_a, clock, bound):
    tampered = key_a[:-1] + ("A" if key_a[-1] != "A" else "B")
    assert api_key_authenticate(raw_key=tampered, reuse_verified=True) is None
    with assert_query_count(1, cached_keys=True):
        assert api_key_authenticate(raw_key=tampered, reuse_verified=True) is None
