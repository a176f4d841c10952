"""The bodies of the gateway paths are read by the project's one JSON reader
(console.parsers): as JSON whatever their Content-Type, bounded in size and depth,
without NaN or Infinity, and a chunked body is read like any other."""
import json

import pytest

from console.parsers import MAX_DEPTH, UNSTORABLE_MESSAGE
from tests.conftest import error_of

JSON_PATHS = [
    ("/v1/agent", {"prompt": "ping"}),
    ("/v1/speak", {"text": "Hallo"}),
    ("/agent", {"role": "trainee", "prompt": "ping"}),
    ("/v1/chat/completions", {"model": "auto", "messages": [{"role": "user", "content": "ping"}]}),
]
IDS = [path for path, _ in JSON_PATHS]


def post_body(body):
    return json.dumps(body)


def post_raw(gateway, path, raw, content_type="application/json"):
    return gateway.post(path, data=raw, content_type=content_type)


@pytest.mark.parametrize("path, body", JSON_PATHS, ids=IDS)
@pytest.mark.parametrize("content_type", ["application/json", "application/x-www-form-urlencoded", "text/plain"])
def test_deeply_nested_arrays_are_malformed_json_not_a_server_error(gateway, path, body, content_type):
    for depth in (990, 5000, MAX_DEPTH + 1):
        response = post_raw(gateway, path, "[" * depth + "]" * depth, content_type)
        assert response.status_code == 400, (depth, response.content[:200])
        error = error_of(response)
        assert error["code"] == "malformed_json"
        assert error["details"] == {"maxDepth": MAX_DEPTH}


@pytest.mark.parametrize("path, body", JSON_PATHS, ids=IDS)
def test_nesting_inside_a_field_is_refused_too(gateway, path, body):
    field = next(iter(body))
    raw = '{"%s": %s}' % (field, "[" * 990 + "]" * 990)
    response = post_raw(gateway, path, raw)
    assert response.status_code == 400 and error_of(response)["details"] == {"maxDepth": MAX_DEPTH}


@pytest.mark.parametrize("path, body", JSON_PATHS, ids=IDS)
@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_nan_and_infinity_are_no_json_numbers(gateway, path, body, constant):
    raw = '{"max_eur": %s, %s' % (constant, post_body(body)[1:])
    response = post_raw(gateway, path, raw)
    assert response.status_code == 400
    assert error_of(response)["code"] == "malformed_json"


@pytest.mark.parametrize("path, body", JSON_PATHS, ids=IDS)
def test_nul_and_lone_surrogates_are_field_errors_by_path(gateway, path, body):
    field = next(name for name in ("prompt", "text", "model") if name in body)
    for escaped in ("\\u0000", "\\ud800"):
        raw = post_body(body).replace('"%s": "' % field, '"%s": "a%s' % (field, escaped))
        response = post_raw(gateway, path, raw)
        assert response.status_code == 400
        error = error_of(response)
        # Refused by the reader, before any field is validated.
        assert (error["code"], error["details"]) == ("validation_error", {field: [UNSTORABLE_MESSAGE]}), error


@pytest.mark.parametrize("path, body", JSON_PATHS, ids=IDS)
def test_the_body_is_json_whatever_its_content_type_and_at_most_256_kb(gateway, path, body):
    for content_type in ("application/x-www-form-urlencoded", "text/plain", "application/octet-stream"):
        response = post_raw(gateway, path, post_body(body), content_type)
        assert response.status_code == 200, (content_type, response.content[:300])
    padded = post_body(body)[:-1] + ', "pad": "' + "a" * (256 * 1024) + '"}'
    response = post_raw(gateway, path, padded)
    assert response.status_code == 413
    assert error_of(response) == {"code": "payload_too_large", "message": "The request body is larger than 262144 "
                                  "bytes.", "details": {"maxBytes": 262144}}
