"""The OpenAPI document at /v2/schema is exact: it validates, every operation says
what it does and how it fails, and the live app answers as it says (schemathesis)."""
import pytest
import yaml
from openapi_spec_validator import validate

from console.openapi import ERROR_DESCRIPTIONS

METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture(scope="module")
def document():
    from rest_framework.test import APIClient

    response = APIClient().get("/v2/schema")
    assert response.status_code == 200
    return yaml.safe_load(response.content)


def operations(document):
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


def test_the_document_is_valid_openapi_3(document):
    validate(document)
    assert document["openapi"].startswith("3.")
    assert document["servers"]


def test_every_operation_has_a_summary_one_tag_and_its_error_responses(document):
    problems = [f"{method.upper()} {path}: {problem}" for path, method, operation in operations(document)
                for problem in operation_problems(path, operation)]
    assert problems == []


def test_the_completeness_check_fails_for_an_operation_without_summary_tag_or_errors():
    bare = {"operationId": "x", "security": [{"apiKey": []}], "responses": {"200": {"description": ""}},
            "parameters": [{"name": "X-Tenant", "in": "header", "schema": {"type": "string"}}]}
    assert operation_problems("/v2/calls/{id}", bare) == [
        "no summary", "not exactly one tag", "error 400 undocumented", "error 401 undocumented",
        "error 403 undocumented", "error 404 undocumented",
    ]


def operation_problems(path, operation):
    problems = []
    if not operation.get("summary"):
        problems.append("no summary")
    if len(operation.get("tags", ())) != 1:
        problems.append("not exactly one tag")
    expected = {400}
    if operation.get("security") and {} not in operation["security"]:
        expected.add(401)
    if any(parameter["name"] == "X-Tenant" for parameter in operation.get("parameters", ())):
        expected.add(403)
    if "{" in path:
        expected.add(404)
    for status in sorted(expected):
        response = operation["responses"].get(str(status))
        schema = (response or {}).get("content", {}).get("application/json", {}).get("schema", {})
        if schema.get("$ref") != "#/components/schemas/Error":
            problems.append(f"error {status} undocumented")
    return problems


def test_operation_ids_are_unique_and_no_type_name_doubles_a_suffix(document):
    ids = [operation["operationId"] for _, _, operation in operations(document)]
    assert len(ids) == len(set(ids))
    assert not [name for name in document["components"]["schemas"] if name.endswith("RequestRequest")]


def test_tenant_bound_operations_declare_x_tenant_and_the_bearer_scheme(document):
    calls = document["paths"]["/v2/calls"]["get"]
    assert "X-Tenant" in [parameter["name"] for parameter in calls["parameters"]]
    assert {"apiKey": []} in calls["security"]
    assert document["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"


def test_lists_are_envelope_objects_and_audio_is_mpeg(document):
    schemas = document["components"]["schemas"]
    for path, key in (("/v2/calls", "calls"), ("/v2/leads", "leads"), ("/v2/numbers", "numbers"),
                      ("/v2/assistants", "assistants")):
        schema = document["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        envelope = schemas[schema["$ref"].rsplit("/", 1)[1]]
        assert envelope["type"] == "object" and envelope["properties"][key]["type"] == "array"
    for path in ("/v2/audio/render", "/api/voice/speak"):
        assert list(document["paths"][path]["post"]["responses"]["200"]["content"]) == ["audio/mpeg"]


def test_every_documented_error_status_has_a_description(document):
    for _, _, operation in operations(document):
        for status, response in operation["responses"].items():
            if int(status) >= 400:
                assert response["description"] in ERROR_DESCRIPTIONS.values()


def test_the_main_requests_have_examples(document):
    for path in ("/v2/numbers", "/v2/public/leads", "/v2/audio/render"):
        content = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]
        assert content.get("examples"), path


# Media types a generated client can send, and what each body's schema must be.
STRUCTURED_BODIES = ("application/json", "multipart/form-data", "application/x-www-form-urlencoded")
BINARY_BODIES = ("application/octet-stream", "text/csv")


def body_problems(document, path, method, operation):
    """Why a generator (openapi-python-client, openapi-generator) would leave the
    operation's body out: a wildcard media type, or a schema that says nothing."""
    problems = []
    for media_type, content in operation.get("requestBody", {}).get("content", {}).items():
        schema = content.get("schema", {})
        if "$ref" in schema:
            schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        if media_type in STRUCTURED_BODIES:
            if schema.get("type") != "object" or not schema.get("properties"):
                problems.append(f"{method.upper()} {path}: {media_type} body without an object schema")
        elif media_type in BINARY_BODIES:
            if (schema.get("type"), schema.get("format")) != ("string", "binary"):
                problems.append(f"{method.upper()} {path}: {media_type} body is not binary")
        else:
            problems.append(f"{method.upper()} {path}: body declared as {media_type}")
    return problems


def test_every_request_body_declares_a_concrete_media_type_and_schema(document):
    problems = [problem for path, method, operation in operations(document)
                for problem in body_problems(document, path, method, operation)]
    assert problems == []
    # The gateway's JSON paths, read whatever their Content-Type, are declared as JSON.
    for path in ("/v1/chat/completions", "/v1/agent", "/v1/speak", "/agent"):
        assert list(document["paths"][path]["post"]["requestBody"]["content"]) == ["application/json"], path


def test_the_body_check_fails_for_a_wildcard_or_an_empty_schema():
    bare = {"paths": {}, "components": {"schemas": {"Empty": {"type": "object"}}}}
    operation = {"requestBody": {"content": {"*/*": {"schema": {"type": "object"}},
                                             "application/json": {"schema": {"$ref": "#/components/schemas/Empty"}}}}}
    assert body_problems(bare, "/v1/x", "post", operation) == [
        "POST /v1/x: body declared as */*", "POST /v1/x: application/json body without an object schema"]
