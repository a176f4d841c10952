"""The auth matrix of CONTRACT §1: credentials first, then the tenant."""
import pytest

from console.credentials.models import ApiKey
from console.credentials.services import api_key_revoke
from tests.conftest import error_of, make_client

pytestmark = pytest.mark.django_db


def test_request_without_key_is_401_unauthenticated(tenant_a):
    response = make_client(tenant="acme").get("/v2/assistants")
    assert response.status_code == 401
    assert error_of(response)["code"] == "unauthenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("header", [
    "Bearer swk_000000000000_" + "x" * 43,  # well-formed, unknown
    "Bearer nope",                          # malformed
    "Basic dXNlcjpwYXNz",                   # another scheme
    "Bearer ",                              # empty
])
def test_bad_key_is_401_unauthenticated(tenant_a, header):
    client = make_client(tenant="acme")
    client.credentials(HTTP_AUTHORIZATION=header, HTTP_X_TENANT="acme")
    response = client.get("/v2/assistants")
    assert response.status_code == 401
    assert error_of(response)["code"] == "unauthenticated"


def test_key_with_one_wrong_character_is_401(tenant_a, key_a):
    tampered = key_a[:-1] + ("A" if key_a[-1] != "A" else "B")
    assert make_client(tampered, "acme").get("/v2/assistants").status_code == 401


def test_revoked_key_is_401(tenant_a, key_a):
    api_key_revoke(api_key=ApiKey.objects.get(tenant=tenant_a))
    response = make_client(key_a, "acme").get("/v2/assistants")
    assert response.status_code == 401
    assert error_of(response)["code"] == "unauthenticated"


def test_key_of_tenant_a_with_x_tenant_b_is_403(tenant_a, tenant_b, key_a):
    response = make_client(key_a, "globex").get("/v2/assistants")
    assert response.status_code == 403
    assert error_of(response)["code"] == "tenant_forbidden"


@pytest.mark.parametrize("slug", ["doesnotexist", "NOT A SLUG", "x"])
def test_unknown_tenant_answers_like_a_foreign_one(tenant_a, key_a, tenant_b, slug):
    unknown = make_client(key_a, slug).get("/v2/assistants")
    foreign = make_client(key_a, "globex").get("/v2/assistants")
    assert unknown.status_code == foreign.status_code == 403
    assert unknown.json() == foreign.json()


def test_no_header_and_unknown_host_is_400_tenant_required(tenant_a, key_a):
    response = make_client(key_a).get("/v2/assistants")
    assert response.status_code == 400
    assert error_of(response)["code"] == "tenant_required"


def test_host_name_selects_the_tenant(tenant_a, key_a):
    response = make_client(key_a).get("/v2/assistants", HTTP_HOST="acme.localhost:8000")
    assert response.status_code == 200


def test_host_name_of_another_tenant_is_403(tenant_a, tenant_b, key_b):
    response = make_client(key_b).get("/v2/assistants", HTTP_HOST="acme.localhost")
    assert response.status_code == 403
    assert error_of(response)["code"] == "tenant_forbidden"


def test_x_tenant_header_overrides_the_host_name(tenant_a, tenant_b, key_b):
    # The host says acme, the header says globex: the header wins, and B's key covers it.
    response = make_client(key_b, "globex").get("/v2/assistants", HTTP_HOST="acme.localhost")
    assert response.status_code == 200


def test_missing_credentials_win_over_missing_tenant(db):
    response = make_client().get("/v2/assistants")
    assert response.status_code == 401


def test_session_login_of_a_member_works(owner):
    client = make_client(tenant="acme")
    client.force_login(owner)
    assert client.get("/v2/assistants").status_code == 200


def test_session_login_of_a_non_member_is_403(outsider, tenant_a):
    client = make_client(tenant="acme")
    client.force_login(outsider)
    response = client.get("/v2/assistants")
    assert response.status_code == 403
    assert error_of(response)["code"] == "tenant_forbidden"
