"""Every API operation refuses a query parameter it does not declare (console/api.py,
`accepts_query`) with a 400 that names it and lists the accepted ones, which are
exactly the query parameters its OpenAPI operation documents."""
import re

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.conftest import error_of, make_client
from tests.gateway_app.conftest import GATEWAY_TOKEN

METHODS = ("get", "post", "put", "patch", "delete")
# Served as plain Django views (calls_app/voice_views.py, agent_app/phone_views.py): the
# carrier's signature or secret alone authenticates them, and a carrier adding a
# parameter to the configured URL must not lose events (docs/api.md).
NOT_CHECKED = {("/voice/webhook/{carrier_id}", "post"), ("/voice/twilio/{carrier_id}/incoming", "post"),
               ("/voice/twilio/{carrier_id}/status", "post"), ("/voice/asterisk/{carrier_id}/calls", "post"),
               ("/voice/asterisk/{carrier_id}/calls/{call_uuid}/transfer", "get"),
               ("/voice/twilio/{carrier_id}/warm", "post"), ("/voice/asterisk/{carrier_id}/calls/{call_uuid}/warm", "post")}


def documented_operations():
    document = SchemaGenerator().get_schema(request=None, public=True)
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item and (path, method) not in NOT_CHECKED:
                accepted = [p["name"] for p in item[method].get("parameters", []) if p["in"] == "query"]
                yield pytest.param(path, method, accepted, id=f"{method.upper()} {path}")


OPERATIONS = list(documented_operations())


def client_for(path, key):
    if path.startswith(("/v1/", "/agent")):
        return make_client(GATEWAY_TOKEN)
    return make_client(key, "acme")


def test_every_api_prefix_is_covered():
    paths = {operation.values[0] for operation in OPERATIONS}
    for prefix in ("/v2/", "/voice/v1/", "/api/voice/", "/v1/", "/health"):
        assert any(path.startswith(prefix) for path in paths), prefix


@pytest.mark.parametrize("path, method, accepted", OPERATIONS)
def test_an_unknown_query_parameter_is_a_400_naming_it_and_the_accepted_ones(
        settings, tenant_a, key_a, path, method, accepted):
    settings.GATEWAY_STATIC_TOKEN = GATEWAY_TOKEN
    url = re.sub(r"\{[^}]+\}", "1", path) + "?bogus=1"
    response = getattr(client_for(path, key_a), method)(url)
    assert response.status_code == 400, response.content
    error = error_of(response)
    assert error["code"] == "validation_error"
    listed = re.fullmatch(r"Unknown query parameter: bogus\. Accepted: (.+)\.", error["message"]).group(1)
    assert error["details"] == {"bogus": [f"Unknown query parameter. Accepted: {listed}."]}
    # The same parameters as the document's (which sorts them by name).
    assert sorted(listed.split(", ")) == sorted(accepted or ["none"])


def test_declared_parameters_still_work(api_a):
    assert api_a.get("/v2/audio/scripts?analyze=1").status_code == 200
    assert api_a.get("/v2/calls?limit=1&status=failed").status_code == 200
    assert api_a.get("/v2/privacy/exports?limit=3").status_code == 200


def test_several_unknown_parameters_are_all_named(api_a):
    error = error_of(api_a.get("/v2/usage?b=1&a=2"))
    assert error["message"] == "Unknown query parameters: a, b. Accepted: none."
    assert set(error["details"]) == {"a", "b"}


def test_credentials_are_checked_first_and_a_wrong_method_stays_405(db, api_a):
    assert make_client().get("/v2/calls?bogus=1").status_code == 401
    assert api_a.put("/v2/calls?bogus=1").status_code == 405


def test_the_public_lead_form_ignores_unknown_body_fields_but_not_query_parameters(db, tenant_a):
    body = {"tenant": "acme", "kind": "callback", "phone": "0171 2345678", "consent_version": "callback-de-1",
            "fieldOfAnOlderWidget": "x"}
    assert make_client().post("/v2/public/leads", body, format="json").status_code == 201
    refused = make_client().post("/v2/public/leads?bogus=1", body, format="json")
    assert error_of(refused)["details"] == {"bogus": ["Unknown query parameter. Accepted: none."]}
