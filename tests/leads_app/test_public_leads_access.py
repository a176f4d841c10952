"""Who may post: origins and the CORS preflight, rate limits, idempotent replays (CONTRACT §2, §6)."""
import pytest

from leads_app.models import Lead
from tests.conftest import error_of
from tests.leads_app.helpers import GOOD_LEAD, lead_with, post_lead

pytestmark = pytest.mark.django_db

ACME_ORIGIN = "https://acme.example"  # allowed by tenant A in the shared fixtures


def preflight(client, origin, **headers):
    return client.options("/v2/public/leads", HTTP_ORIGIN=origin, HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
                          HTTP_ACCESS_CONTROL_REQUEST_HEADERS="content-type,idempotency-key", **headers)


# --- Origins ------------------------------------------------------------------------------

def test_post_without_origin_is_accepted_as_a_server(public, tenant_a):
    response = post_lead(public)

    assert response.status_code == 201
    assert "Access-Control-Allow-Origin" not in response


def test_post_from_an_allowed_origin_carries_cors_headers(public, tenant_a):
    response = post_lead(public, HTTP_ORIGIN=ACME_ORIGIN)

    assert response.status_code == 201
    assert response["Access-Control-Allow-Origin"] == ACME_ORIGIN
    assert "Origin" in response["Vary"]
    assert "Access-Control-Allow-Credentials" not in response


def test_post_from_the_services_own_origin_is_accepted(public, tenant_a):
    response = post_lead(public, HTTP_ORIGIN="http://testserver")

    assert response.status_code == 201


@pytest.mark.parametrize("origin", ["https://evil.example", "http://acme.example", "https://acme.example:8443",
                                    "null", "not an origin"])
def test_post_from_another_origin_is_403_and_stores_nothing(public, tenant_a, origin):
    response = post_lead(public, HTTP_ORIGIN=origin)

    assert response.status_code == 403
    assert error_of(response)["code"] == "origin_forbidden"
    assert "Access-Control-Allow-Origin" not in response
    assert not Lead.objects.exists()


def test_origin_of_one_tenant_cannot_post_for_another(public, tenant_a, tenant_b):
    response = post_lead(public, lead_with(tenant="globex"), HTTP_ORIGIN=ACME_ORIGIN)

    assert response.status_code == 403
    assert error_of(response)["code"] == "origin_forbidden"
    assert not Lead.objects.exists()


def test_foreign_page_gets_the_same_403_whether_or_not_the_tenant_exists(public, tenant_a):
    known = post_lead(public, HTTP_ORIGIN="https://evil.example")
    unknown = post_lead(public, lead_with(tenant="nope-tenant"), HTTP_ORIGIN="https://evil.example")

    assert known.status_code == unknown.status_code == 403
    assert error_of(known) == error_of(unknown)


def test_unknown_tenant_from_the_services_own_origin_is_a_field_error(public, tenant_a):
    response = post_lead(public, lead_with(tenant="nope-tenant"), HTTP_ORIGIN="http://testserver")

    assert response.status_code == 400
    assert list(error_of(response)["details"]) == ["tenant"]


def test_field_errors_for_an_allowed_origin_are_readable_by_the_page(public, tenant_a):
    response = post_lead(public, lead_with(phone="abc"), HTTP_ORIGIN=ACME_ORIGIN)

    assert response.status_code == 400
    assert response["Access-Control-Allow-Origin"] == ACME_ORIGIN


def test_preflight_allows_an_origin_that_a_tenant_allows(public, tenant_a):
    response = preflight(public, ACME_ORIGIN)

    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == ACME_ORIGIN
    assert "POST" in response["Access-Control-Allow-Methods"]
    allowed_headers = response["Access-Control-Allow-Headers"].lower()
    assert "content-type" in allowed_headers and "idempotency-key" in allowed_headers
    assert int(response["Access-Control-Max-Age"]) > 0
    assert response.content == b""


def test_preflight_refuses_an_origin_that_no_tenant_allows(public, tenant_a):
    response = preflight(public, "https://evil.example")

    assert response.status_code == 403
    assert error_of(response)["code"] == "origin_forbidden"
    assert "Access-Control-Allow-Origin" not in response


def test_options_without_origin_lists_the_methods(public, tenant_a):
    response = public.options("/v2/public/leads")

    assert response.status_code == 204
    assert "POST" in response["Allow"]


# --- Rate limit ---------------------------------------------------------------------------

def limit_tenant(tenant, posts):
    tenant.lead_rate_limit = posts
    tenant.save(update_fields=["lead_rate_limit"])


def test_posts_over_the_tenants_limit_are_429_with_retry_after(public, tenant_a):
    limit_tenant(tenant_a, 3)
    for n in range(3):  # three numbers: the same number again would be folded into its lead
        assert post_lead(public, lead_with(phone=f"+49 30 98765{n}")).status_code == 201

    response = post_lead(public, lead_with(phone="+49 30 987659"))

    assert response.status_code == 429
    assert error_of(response)["code"] == "rate_limited"
    assert 1 <= int(response["Retry-After"]) <= 600
    assert Lead.objects.count() == 3


def test_default_limit_is_30_posts_per_address(public, tenant_a):
    statuses = [post_lead(public).status_code for _ in range(31)]

    assert statuses == [201] * 30 + [429]


def test_rate_limit_counts_per_client_address(public, tenant_a):
    limit_tenant(tenant_a, 1)
    assert post_lead(public, REMOTE_ADDR="198.51.100.1").status_code == 201
    assert post_lead(public, REMOTE_ADDR="198.51.100.1").status_code == 429

    assert post_lead(public, REMOTE_ADDR="198.51.100.2").status_code == 201


def test_ipv6_clients_count_per_64_block(public, tenant_a):
    limit_tenant(tenant_a, 1)
    assert post_lead(public, REMOTE_ADDR="2001:db8:1:2::1").status_code == 201

    assert post_lead(public, REMOTE_ADDR="2001:db8:1:2::ffff").status_code == 429
    assert post_lead(public, REMOTE_ADDR="2001:db8:1:3::1").status_code == 201


def test_rate_limit_counts_per_tenant(public, tenant_a, tenant_b):
    limit_tenant(tenant_a, 1)
    assert post_lead(public).status_code == 201
    assert post_lead(public).status_code == 429

    assert post_lead(public, lead_with(tenant="globex")).status_code == 201


def test_rate_limited_answer_is_readable_by_an_allowed_page(public, tenant_a):
    limit_tenant(tenant_a, 1)
    post_lead(public, HTTP_ORIGIN=ACME_ORIGIN)

    response = post_lead(public, HTTP_ORIGIN=ACME_ORIGIN)

    assert response.status_code == 429
    assert response["Access-Control-Allow-Origin"] == ACME_ORIGIN
    assert "Retry-After" in response["Access-Control-Expose-Headers"]


def test_behind_trusted_proxies_the_forwarded_client_address_counts(public, tenant_a, settings):
    settings.LEADS_TRUSTED_PROXIES = 1
    limit_tenant(tenant_a, 1)
    proxy = {"REMOTE_ADDR": "10.0.0.1"}
    assert post_lead(public, HTTP_X_FORWARDED_FOR="198.51.100.1", **proxy).status_code == 201

    # A client cannot escape its count by sending its own X-Forwarded-For entries.
    assert post_lead(public, HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.1", **proxy).status_code == 429
    assert post_lead(public, HTTP_X_FORWARDED_FOR="198.51.100.2", **proxy).status_code == 201


def test_without_trusted_proxies_forwarded_headers_are_ignored(public, tenant_a):
    limit_tenant(tenant_a, 1)
    assert post_lead(public, HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 201

    assert post_lead(public, HTTP_X_FORWARDED_FOR="198.51.100.2").status_code == 429


# --- Idempotency-Key ----------------------------------------------------------------------

def test_replay_with_the_same_key_returns_the_first_response_and_creates_nothing(public, tenant_a):
    first = post_lead(public, HTTP_IDEMPOTENCY_KEY="k-123")

    replay = post_lead(public, HTTP_IDEMPOTENCY_KEY="k-123")

    assert first.status_code == replay.status_code == 201
    assert replay.json() == first.json()
    assert replay["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert Lead.objects.count() == 1


def test_same_key_with_another_body_is_409_and_creates_nothing(public, tenant_a):
    post_lead(public, HTTP_IDEMPOTENCY_KEY="k-123")

    response = post_lead(public, lead_with(phone="+49 30 987654"), HTTP_IDEMPOTENCY_KEY="k-123")

    assert response.status_code == 409
    assert error_of(response)["code"] == "idempotency_key_mismatch"
    assert Lead.objects.count() == 1


def test_different_keys_are_different_posts(public, tenant_a):
    post_lead(public, HTTP_IDEMPOTENCY_KEY="k-1")
    post_lead(public, HTTP_IDEMPOTENCY_KEY="k-2")

    # The second post of the same number is a duplicate: folded into the first lead.
    [lead] = Lead.objects.all()
    assert lead.repeat_count == 1


def test_failed_post_does_not_use_up_its_key(public, tenant_a):
    assert post_lead(public, lead_with(phone="abc"), HTTP_IDEMPOTENCY_KEY="k-1").status_code == 400

    response = post_lead(public, GOOD_LEAD, HTTP_IDEMPOTENCY_KEY="k-1")

    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response
