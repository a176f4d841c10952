"""`/v2/tools`: the tenant's HTTP tools, their secret shown once, their URL refused
where the SSRF guard refuses webhooks, their parameters a valid JSON Schema."""
import pytest
from django.test import override_settings

from console.assistants.models import Assistant
from tests.conftest import error_of
from tools_app.models import HttpTool

pytestmark = pytest.mark.django_db

URL = "/v2/tools"
TOOL = {"name": "termin_pruefen", "description": "Prüft, ob ein Termin frei ist.",
        "parameters": {"type": "object", "properties": {"datum": {"type": "string"}}, "required": ["datum"]},
        "url": "https://praxis.example/api/termine", "timeoutMs": 2500}


def post(api, body):
    return api.post(URL, body, format="json")


def test_a_tool_is_created_with_its_secret_shown_once(api_a):
    response = post(api_a, TOOL)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["id"].startswith("tl_") and body["secret"].startswith("whsec_")
    assert {key: body[key] for key in TOOL} == TOOL
    shown = api_a.get(f"{URL}/{body['id']}").json()
    assert "secret" not in shown and shown == {key: value for key, value in body.items() if key != "secret"}
    assert api_a.get(URL).json() == {"tools": [shown]}
    assert body["secret"] not in str(list(HttpTool.objects.values()))  # derived, never stored


def test_the_defaults(api_a):
    body = post(api_a, {"name": "ping", "url": "https://praxis.example/ping"}).json()
    assert body["parameters"] == {"type": "object", "properties": {}} and body["timeoutMs"] == 3000
    assert body["description"] == ""


@pytest.mark.parametrize(("change", "field", "code"), [
    ({"name": "Termin"}, "name", "validation_error"),
    ({"name": "9termin"}, "name", "validation_error"),
    ({"name": "a" * 65}, "name", "validation_error"),
    ({"name": "transfer_call"}, "name", "validation_error"),
    ({"parameters": {"type": "nope"}}, "parameters", "validation_error"),
    ({"parameters": {"type": "array"}}, "parameters", "validation_error"),
    ({"parameters": {"type": "object", "properties": {"x": {"$ref": "http://169.254.169.254/"}}}}, "parameters",
     "validation_error"),
    ({"timeoutMs": 5001}, "timeoutMs", "validation_error"),
    ({"timeoutMs": 50}, "timeoutMs", "validation_error"),
    ({"url": "ftp://praxis.example/x"}, "url", "tool_url_refused"),
    ({"url": "http://praxis.example/x"}, "url", "tool_url_refused"),
    ({"url": "https://user:pw@praxis.example/x"}, "url", "tool_url_refused"),
    ({"url": "https://praxis.example:99999/x"}, "url", "validation_error"),
    ({"secret": "whsec_mine"}, "secret", "validation_error"),
])
def test_every_problem_is_a_400_naming_its_field(api_a, change, field, code):
    response = post(api_a, {**TOOL, **change})
    assert response.status_code == 400, response.content
    error = error_of(response)
    assert error["code"] == code and field in error["details"], error
    assert not HttpTool.objects.exists()


@pytest.mark.parametrize("url", ["https://127.0.0.1/x", "http://127.0.0.1:8080/x", "https://localhost/x",
                                 "https://10.1.2.3/x", "https://169.254.169.254/latest", "https://[::1]/x",
                                 "https://[::ffff:169.254.169.254]/x", "https://[64:ff9b::a9fe:a9fe]/x"])
def test_private_and_loopback_targets_are_refused(api_a, url):
    with override_settings(OUTBOUND_ALLOW_PRIVATE_TARGETS=False):
        response = post(api_a, {**TOOL, "url": url})
    assert response.status_code == 400 and error_of(response)["code"] == "tool_url_refused", response.content


def test_a_name_is_the_tenants_once(api_a, api_b):
    assert post(api_a, TOOL).status_code == 201
    again = post(api_a, {**TOOL, "url": "https://praxis.example/anders"})
    assert again.status_code == 409 and error_of(again)["code"] == "tool_name_taken"
    assert post(api_b, TOOL).status_code == 201  # another tenant's names are its own


def test_a_patch_changes_what_it_names_and_is_checked(api_a):
    tool = post(api_a, TOOL).json()
    changed = api_a.patch(f"{URL}/{tool['id']}", {"timeoutMs": 1000, "description": "Neu."}, format="json").json()
    assert changed["timeoutMs"] == 1000 and changed["description"] == "Neu." and changed["url"] == TOOL["url"]
    refused = api_a.patch(f"{URL}/{tool['id']}", {"url": "http://praxis.example/x"}, format="json")
    assert refused.status_code == 400 and "url" in error_of(refused)["details"]
    assert api_a.patch(f"{URL}/{tool['id']}", {}, format="json").status_code == 400


def test_deleting_a_tool_that_assistants_use_is_a_409_naming_them(api_a, tenant_a):
    tool = post(api_a, TOOL).json()
    assistant = api_a.post("/v2/assistants", {"name": "Empfang", "tools": [tool["id"]]}, format="json").json()

    response = api_a.delete(f"{URL}/{tool['id']}")

    assert response.status_code == 409
    assert error_of(response)["details"] == {"assistants": [{"id": assistant["id"], "name": "Empfang"}]}
    api_a.patch(f"/v2/assistants/{assistant['id']}", {"tools": []}, format="json")
    assert api_a.delete(f"{URL}/{tool['id']}").status_code == 204
    assert Assistant.objects.get(pk=assistant["id"]).tools == []


def test_rotating_gives_a_new_secret(api_a):
    tool = post(api_a, TOOL).json()
    rotated = api_a.post(f"{URL}/{tool['id']}/rotate-secret", {"keepPrevious": False}, format="json")
    assert rotated.status_code == 200 and rotated.json()["secret"] not in (tool["secret"], "")
    assert not HttpTool.objects.get(pk=tool["id"]).previous_secret_nonce


def test_a_tenant_has_at_most_the_configured_tools(api_a):
    with override_settings(TOOLS_MAX_PER_TENANT=1):
        assert post(api_a, TOOL).status_code == 201
        response = post(api_a, {**TOOL, "name": "zweites"})
    assert response.status_code == 409 and error_of(response)["details"] == {"maxTools": 1}
