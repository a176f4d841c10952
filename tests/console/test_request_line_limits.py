"""Long URLs and many query parameters on the API paths are answered in the contract's
JSON shape (console.middleware.RequestLineLimitMiddleware): over API_MAX_URI_BYTES →
414 `uri_too_long`, over DATA_UPLOAD_MAX_NUMBER_FIELDS parameters → 400
`too_many_query_parameters`; below both, the endpoint decides as before. gunicorn's
own refusals (console/gunicorn_errors.py) are JSON too; tests/console/
test_request_line_limits_served.py sends the same cases to a served gunicorn."""
import json

import pytest
from django.test import Client

from console.gunicorn_errors import json_error
from tests.conftest import error_of

pytestmark = pytest.mark.django_db

LIMIT = 4094


def padded_query(total_bytes, path="/v2/calls"):
    """`?cursor=AAA…` making the path and query string exactly `total_bytes` long."""
    return "cursor=" + "A" * (total_bytes - len(path) - len("?cursor="))


def test_a_limit_of_three_thousand_digits_is_a_number_over_the_maximum(api_a):
    response = api_a.get("/v2/calls?limit=" + "9" * 3000)
    assert response.status_code == 200
    assert response.json()["calls"] == []


def test_a_limit_of_five_thousand_digits_is_414_in_json(api_a):
    response = api_a.get("/v2/calls?limit=" + "9" * 5000)
    assert response.status_code == 414
    assert error_of(response)["code"] == "uri_too_long"


def test_a_long_cursor_below_the_limit_is_the_cursors_own_error(api_a):
    response = api_a.get("/v2/calls?" + padded_query(LIMIT))
    assert response.status_code == 400
    assert error_of(response)["details"] == {"cursor": ["Ensure this field has no more than 500 characters."]}


def test_a_url_one_byte_over_the_limit_is_414_in_json(api_a, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = api_a.get("/v2/calls?" + padded_query(LIMIT + 1))
    assert response.status_code == 414
    error = error_of(response)
    assert error["code"] == "uri_too_long"
    assert error["details"] == {"maxBytes": LIMIT}
    assert "4,095 bytes" in error["message"] and "4,094" in error["message"]


def test_a_long_path_counts_too(api_a):
    response = api_a.get("/v2/calls/" + "c" * LIMIT)
    assert response.status_code == 414
    assert error_of(response)["code"] == "uri_too_long"


def test_the_limit_is_checked_before_authentication():
    response = Client().get("/v2/leads?" + padded_query(20_000, "/v2/leads"))
    assert response.status_code == 414
    assert error_of(response)["code"] == "uri_too_long"


@pytest.mark.parametrize("path", ["/health", "/voice/v1/calls", "/api/voice/speak", "/v1/models", "/agent"])
def test_every_api_path_has_the_limit(path):
    response = Client().get(f"{path}?x=" + "y" * LIMIT)
    assert response.status_code == 414
    assert error_of(response)["code"] == "uri_too_long"


def test_the_limit_is_a_setting(api_a, settings):
    settings.API_MAX_URI_BYTES = 100
    assert api_a.get("/v2/calls?" + padded_query(100)).status_code == 400  # the cursor's own error
    response = api_a.get("/v2/calls?" + padded_query(101))
    assert response.status_code == 414
    assert error_of(response)["details"] == {"maxBytes": 100}


def test_a_thousand_parameters_are_read_and_named_as_unknown(api_a, settings):
    settings.API_MAX_URI_BYTES = 8000  # a thousand named parameters need about 6,900 bytes
    response = api_a.get("/v2/calls?" + "&".join(f"p{i}=1" for i in range(1000)))
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "validation_error"
    assert len(error["details"]) == 1000


@pytest.mark.parametrize("query", ["&".join(f"p{i}=1" for i in range(1001)), "&".join(["a=1"] * 1001),
                                   "&" * 1000])
def test_more_parameters_than_django_reads_are_400_in_json(api_a, query, django_assert_num_queries, settings):
    settings.API_MAX_URI_BYTES = 8000  # the parameters' count is under test, not the URL's length
    with django_assert_num_queries(0):
        response = api_a.get("/v2/calls?" + query)
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "too_many_query_parameters"
    assert error["details"] == {"maxParameters": 1000}
    assert "1,001 query parameters" in error["message"]


def test_the_admin_keeps_djangos_handling_of_its_urls(owner):
    client = Client()
    client.force_login(owner)
    response = client.get("/admin/leads_app/lead/?q=" + "x" * LIMIT)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")


# --- gunicorn's own refusals --------------------------------------------------------------

def parse(raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    assert int(headers["Content-Length"]) == len(body)
    return status_line, headers, json.loads(body)


def test_gunicorns_414_is_the_same_json_as_djangos():
    status_line, headers, body = parse(json_error(414, "URI Too Long", "Request Line is too large (9000 > 8190)"))
    assert status_line == "HTTP/1.1 414 URI Too Long"
    assert headers["Content-Type"] == "application/json" and headers["Connection"] == "close"
    assert body["error"]["code"] == "uri_too_long"
    assert body["error"]["details"] == {"maxBytes": LIMIT}
    assert "4,094 bytes" in body["error"]["message"]


def test_gunicorns_400_quotes_a_bounded_part_of_the_request():
    _, _, body = parse(json_error(400, "Bad Request", "Invalid Request Line '" + "x" * 5000 + "'"))
    assert body["error"]["code"] == "bad_request"
    assert body["error"]["message"].startswith("The request is not valid HTTP: Invalid Request Line 'xxx")
    assert len(body["error"]["message"]) < 300


@pytest.mark.parametrize(("status", "code"), [(431, "header_fields_too_large"), (501, "not_implemented"),
                                              (500, "internal_error"), (403, "forbidden")])
def test_gunicorns_other_refusals_are_json_with_a_code(status, code):
    status_line, headers, body = parse(json_error(status, "Reason", "whatever"))
    assert status_line == f"HTTP/1.1 {status} Reason"
    assert body == {"error": {"code": code, "message": body["error"]["message"], "details": {}}}
    assert body["error"]["message"] and "whatever" not in body["error"]["message"]
