"""Reads by a key verified a moment ago skip DRF's decisions (console/verified_reads.py)
and answer byte for byte what DRF's whole path answers: status, body and headers, for
every tenant-bound GET route and for their errors. Every other request takes DRF's path."""
import pytest
from rest_framework.throttling import AnonRateThrottle

import console.api
from calls_app.views import UsageView
from console.errors import ValidationFailed
from console.verified_reads import _default_policies
from tests.conftest import error_of, make_client
from tests.console.conftest import answer
from tests.console.test_api_query_counts import ENDPOINTS, calcom, seeded, with_ids  # noqa: F401 - fixtures

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("render_cache_dir")]


@pytest.fixture(autouse=True)
def _keys_stay_verified(settings):
    """"Verified a moment ago" holds between a test's requests on a busy machine too
    (the bound itself is tested in tests/credentials/test_verified_keys.py)."""
    settings.API_KEY_CACHE_SECONDS = 600

READS = [path for method, path, *_ in ENDPOINTS if method == "GET"]
ERRORS = [
    "/v2/leads?stauts=new",  # an unknown query parameter (400)
    "/v2/calls?limit=abc",  # an invalid one (400)
    "/v2/leads?status=lost",  # not a status (400)
    "/v2/leads/ld_none",  # no such lead (404)
    "/v2/assistants/as_none",
    "/v2/audio/scripts/nope.nope",
    "/v2/calls?limit=1",  # a page with a cursor to the next
    "/v2/calls",  # the first page at the default limit: a body of the tenant alone (`list_body`)
]


@pytest.mark.parametrize("path", READS + ERRORS)
def test_a_verified_read_answers_what_drfs_path_answers(api_a, seeded, drf_cycles, monkeypatch, path):  # noqa: F811
    path = with_ids(path, seeded)
    api_a.get("/v2/usage")  # verifies the key
    verified = api_a.get(path)
    assert drf_cycles == ["/v2/usage"]  # the read itself took no decision of DRF's

    monkeypatch.setattr(console.api, "verified_read", lambda *args, **kwargs: None)
    through_drf = api_a.get(path)
    assert drf_cycles == ["/v2/usage", path.split("?")[0]]
    assert answer(verified) == answer(through_drf)
    assert verified.status_code in (200, 400, 404)


NOBODYS_KEY = "swk_000000000000_" + "x" * 43


@pytest.mark.parametrize("key, tenant, path, accept, status", [
    ("a", "acme", "/v2/usage", "text/csv", 406),  # no renderer for it
    ("a", "acme", "/v2/usage?format=json", None, 400),  # DRF's format override: not a parameter here
    ("a", "globex", "/v2/usage", None, 403),  # another tenant
    ("a", None, "/v2/usage", None, 400),  # the host name chooses: none here (tenant_required)
    (NOBODYS_KEY, "acme", "/v2/usage", None, 401),
])
def test_other_reads_take_drfs_path(api_a, key_a, tenant_b, drf_cycles, key, tenant, path, accept, status):
    api_a.get("/v2/usage")  # the key is verified
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    response = make_client(key_a if key == "a" else key, tenant).get(path, **headers)
    assert response.status_code == status, response.content[:300]
    assert drf_cycles == ["/v2/usage", "/v2/usage"]


def test_a_key_not_verified_a_moment_ago_is_checked_by_drfs_path(tenant_a, key_a, drf_cycles):
    client = make_client(key_a, "acme")
    assert client.get("/v2/usage").status_code == 200
    assert client.get("/v2/usage").status_code == 200
    assert drf_cycles == ["/v2/usage"]  # the first read verified the key


def test_writes_take_drfs_path(api_a, drf_cycles):
    api_a.get("/v2/usage")
    assert api_a.patch("/v2/audio/settings", {"recordingEnabled": True}, format="json").status_code == 200
    assert drf_cycles == ["/v2/usage", "/v2/audio/settings"]


def test_views_with_policies_of_their_own_take_drfs_path():
    # (One with an `initial` of its own is refused when it is created: test_isolation_matrix.py.)
    throttled = type("ThrottledUsage", (UsageView,), {"throttle_classes": [AnonRateThrottle]})
    assert _default_policies(UsageView, console.api.TenantBoundMixin)
    assert not _default_policies(throttled, console.api.TenantBoundMixin)


def test_a_direct_body_that_fails_is_answered_by_drfs_exception_handler(api_a, drf_cycles, monkeypatch):
    def refused(view, tenant):
        raise ValidationFailed("Not now.")

    api_a.get("/v2/usage")
    monkeypatch.setattr(UsageView, "get_body", refused)
    response = api_a.get("/v2/usage")
    assert (response.status_code, error_of(response)["code"]) == (400, "validation_error")
    assert error_of(response)["message"] == "Not now."
