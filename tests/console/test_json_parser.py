"""The one JSON reader of request bodies (console/parsers.py): what Python's json
accepts but the service cannot handle or store becomes a 400 in the contract's shape."""
import json

import pytest

from console.errors import MalformedJson, ValidationFailed
from console.parsers import MAX_DEPTH, MAX_REPORTED_FIELDS, JsonRefused, json_loads, json_text
from leads_app.models import Lead
from scripts_app.models import ScriptOverride
from tests.conftest import error_of


def nested(depth):
    return "[" * depth + "]" * depth


def test_nesting_up_to_the_limit_is_read():
    assert json_loads(nested(MAX_DEPTH)) == json.loads(nested(MAX_DEPTH))
    assert json_loads('{"a": ' * (MAX_DEPTH - 1) + "{}" + "}" * (MAX_DEPTH - 1))


@pytest.mark.parametrize("text", [
    nested(MAX_DEPTH + 1), nested(3000), nested(200_000), '{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1),
    '{"x": [' + nested(MAX_DEPTH) + "]}",
])
def test_deeper_nesting_is_malformed_json(text):
    with pytest.raises(MalformedJson) as raised:
        json_loads(text)
    assert raised.value.details == {"maxDepth": MAX_DEPTH}


@pytest.mark.parametrize("raw", [
    b"NaN", b"[Infinity]", b'{"a": -Infinity}', b"1e400", b"[-1e999]", b"1" + b"0" * 5000,
    b"\xff\xfe{}", b"\xef\xbb\xbf{}", b'{"a": "\xc3"}', b"{'a': 1}", b"", b"{", b'{"a": 1} x',
])
def test_what_is_not_finite_json_in_utf_8_is_malformed(raw):
    with pytest.raises(MalformedJson):
        json_loads(raw)


@pytest.mark.parametrize("text, field", [
    ('{"text": "a\\u0000b"}', "text"),
    ('{"text": "\\ud800"}', "text"),
    ('{"text": "x\\udfffy"}', "text"),
    ('{"variables": {"firstName": "A\\ud800"}}', "variables.firstName"),
    ('{"phrases": ["ok", "\\u0000"]}', "phrases[1]"),
    ('{"data": {"list": [{"text": "\\ud83d"}]}}', "data.list[0].text"),
    ('"\\u0000"', "non_field_errors"),
    ('["\\u0000"]', "[0]"),
    ('{"te\\u0000xt": 1}', "te\\u0000xt"),
    ('{"a": {"\\ud800": "x"}}', "a.\\ud800"),
])
def test_nul_and_lone_surrogates_are_field_errors_naming_the_path(text, field):
    with pytest.raises(ValidationFailed) as raised:
        json_loads(text)
    assert list(raised.value.details) == [field]
    # The field name itself is plain text that any database and log can take.
    assert field.isascii() and "\x00" not in field


def test_many_bad_fields_are_reported_up_to_a_bound():
    body = json.dumps({f"f{i}": "\x00" for i in range(100)})
    with pytest.raises(ValidationFailed) as raised:
        json_loads(body)
    assert len(raised.value.details) == MAX_REPORTED_FIELDS


@pytest.mark.parametrize("text", ['"Daumen \\ud83d\\udc4d"', '"\\u202eRTL \\u200f mark"', '"tab\\tand\\u0007bell"',
                                  '{"": 1}', '{"a": 1, "a": 2}'])
def test_other_text_is_read_as_json_says(text):
    assert json_loads(text) == json.loads(text)


# --- through the endpoints ----------------------------------------------------------------

DEEP = nested(3000).encode()


@pytest.mark.django_db
@pytest.mark.parametrize("method, path", [
    ("post", "/v2/numbers"), ("put", "/v2/audio/scripts/call.hold"), ("post", "/v2/audio/render"),
    ("post", "/v2/audio/transcribe"), ("post", "/voice/v1/calls"), ("patch", "/v2/audio/settings"),
    ("post", "/api/voice/speak"),
])
def test_deep_nesting_is_malformed_json_on_tenant_endpoints(api_a, method, path):
    response = getattr(api_a, method)(path, DEEP, content_type="application/json")
    assert response.status_code == 400 and error_of(response)["code"] == "malformed_json"


@pytest.mark.django_db
def test_deep_nesting_is_malformed_json_on_the_public_leads_endpoint(client, tenant_a):
    response = client.post("/v2/public/leads", DEEP, content_type="application/json")
    assert response.status_code == 400 and error_of(response)["code"] == "malformed_json"
    assert not Lead.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("escape", ["\\ud800", "\\u0000"])
def test_unstorable_script_text_is_a_field_error_and_stores_nothing(api_a, escape):
    response = api_a.put("/v2/audio/scripts/call.hold", f'{{"text": "Bitte warten {escape} Sie."}}',
                         content_type="application/json")
    error = error_of(response)
    assert response.status_code == 400 and error["code"] == "validation_error" and list(error["details"]) == ["text"]
    assert not ScriptOverride.objects.exists()


@pytest.mark.django_db
def test_lone_surrogate_in_render_variables_is_a_field_error(api_a):
    body = '{"touchpoint": "callback.confirmation", "variables": {"firstName": "A\\ud800", "phone": "1"}}'
    response = api_a.post("/v2/audio/render", body, content_type="application/json")
    assert response.status_code == 400 and list(error_of(response)["details"]) == ["variables.firstName"]


@pytest.mark.django_db
def test_a_body_over_the_upload_limit_is_413_without_reading_it_all(api_a, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api_a.post("/v2/numbers", json.dumps({"e164": "+4930123456", "label": "x" * 2000}),
                          content_type="application/json")
    assert response.status_code == 413 and error_of(response)["code"] == "payload_too_large"


@pytest.mark.parametrize("raw, why", [
    ("[" * 5000, "nests deeper than"), (nested(MAX_DEPTH + 1), "nests deeper than"),
    ('{"a": NaN}', "NaN is not a JSON number"), ("[Infinity]", "Infinity is not a JSON number"),
    ('{"a": "\\u0000"}', "NUL characters"), (b"\xff", "not UTF-8"), ("{", "not valid JSON"),
])
def test_json_text_refuses_what_a_model_or_tool_writes_as_a_value_error_saying_why(raw, why):
    # The reader of a model's, a lane's or a tool's JSON: the same checks as a request
    # body's, as a ValueError (never a RecursionError, never an API error).
    with pytest.raises(JsonRefused) as raised:
        json_text(raw, what="The arguments")
    assert isinstance(raised.value, ValueError) and why in str(raised.value), str(raised.value)
    assert str(raised.value).startswith("The arguments")
