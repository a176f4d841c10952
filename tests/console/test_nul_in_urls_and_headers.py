"""NUL characters outside the body (console.middleware.RefuseNulMiddleware): PostgreSQL
refuses them in text, so they are refused before any view can put them in a query."""
import pytest

from tests.conftest import error_of

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/v2/numbers/%00", "/v2/leads/ld_%00", "/v2/calls/a%00b", "/voice/webhook/%00"])
def test_a_nul_in_the_path_names_no_resource(api_a, path):
    response = api_a.get(path)
    assert response.status_code == 404 and error_of(response)["code"] == "not_found"


def test_a_nul_in_a_query_parameter_is_a_field_error_naming_it(api_a):
    response = api_a.get("/v2/leads?status=new%00&kind=callback")
    error = error_of(response)
    assert response.status_code == 400 and error["code"] == "validation_error"
    assert list(error["details"]) == ["status"]


def test_a_nul_in_a_query_parameter_name_is_named_with_an_escape(api_a):
    response = api_a.get("/v2/leads?st%00atus=new")
    assert response.status_code == 400 and list(error_of(response)["details"]) == ["st\\u0000atus"]


@pytest.mark.parametrize("header, name", [("HTTP_ORIGIN", "Origin"), ("HTTP_X_TENANT", "X-Tenant"),
                                          ("HTTP_IDEMPOTENCY_KEY", "Idempotency-Key")])
def test_a_nul_in_a_header_is_a_field_error_naming_it(client, tenant_a, header, name):
    response = client.post("/v2/public/leads", {"tenant": "acme"}, content_type="application/json",
                           **{header: "https://acme.example\x00"})
    assert response.status_code == 400 and list(error_of(response)["details"]) == [name]


def test_pages_outside_the_api_are_left_to_django(client):
    assert client.get("/widget/callback.js?v=%00").status_code == 200
