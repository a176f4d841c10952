"""Long request lines against the served gunicorn (gunicorn.conf.py): no answer on the
API paths is HTML, whether Django refuses the URL (up to gunicorn's 8,190-byte request
line) or gunicorn itself does (longer lines, oversized headers, lines that are not
HTTP). Before, every request line over 4,094 bytes got gunicorn's HTML 414."""
import json
import socket

import pytest

from tests.live_service import LiveService, request

pytestmark = pytest.mark.slow

SETUP = """
from console.tenants.services import tenant_create
tenant_create(slug="acme", name="Acme")
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    live = LiveService(tmp_path_factory.mktemp("request-lines"))
    try:
        live.migrate()
        live.manage("shell", "-v0", "-c", SETUP)
        key = live.manage("create_api_key", "acme").split()[-1]
        base, _ = live.start()
        yield base, {"Authorization": f"Bearer {key}", "X-Tenant": "acme"}
    finally:
        live.stop()


def get(served, path_and_query, headers=None):
    base, auth = served
    answer = request("GET", base + path_and_query, headers={**auth, **(headers or {})})
    assert answer is not None
    return answer


def error_of(answer, status):
    assert answer.status == status, answer.body[:300]
    assert answer.headers["Content-Type"].startswith("application/json"), answer.body[:300]
    body = answer.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    return body["error"]


def test_a_limit_of_five_thousand_digits_is_answered_by_the_api_in_json(served):
    # A request line of about 5,030 bytes: over gunicorn's default, which answered HTML.
    answer = get(served, "/v2/calls?limit=" + "9" * 5000)
    error = error_of(answer, 414)
    assert error["code"] == "uri_too_long" and error["details"] == {"maxBytes": 4094}


def test_a_limit_of_three_thousand_digits_is_a_number(served):
    answer = get(served, "/v2/calls?limit=" + "9" * 3000)
    assert answer.status == 200
    assert answer.json() == {"calls": [], "next": None}


def test_a_thousand_query_parameters_are_answered_in_json(served):
    named = get(served, "/v2/calls?" + "&".join(f"p{i}=1" for i in range(500)))  # 3,389 bytes
    assert error_of(named, 400)["code"] == "validation_error"
    too_many = get(served, "/v2/calls?" + "&".join(["a"] * 1001))  # 2,001 bytes
    error = error_of(too_many, 400)
    assert error["code"] == "too_many_query_parameters" and error["details"] == {"maxParameters": 1000}


@pytest.mark.parametrize(("cursor_length", "status", "code"), [
    (3_000, 400, "validation_error"),  # the cursor's own limit (500 characters)
    (4_090, 414, "uri_too_long"),  # Django's limit (4,094 bytes of path and query)
    (20_000, 414, "uri_too_long"),  # gunicorn's limit (8,190 bytes of request line)
])
def test_long_cursors_are_answered_in_json(served, cursor_length, status, code):
    answer = get(served, "/v2/calls?cursor=" + "A" * cursor_length)
    error = error_of(answer, status)
    assert error["code"] == code
    if status == 414:
        assert error["details"] == {"maxBytes": 4094}
    # Django's answers carry the request id of the log line; gunicorn's cannot.
    assert ("X-Request-Id" in answer.headers) == (cursor_length < 8_190)


def raw(served, data):
    """The answer to bytes written on a fresh connection, read until gunicorn closes it."""
    host, port = served[0].removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(data)
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value for name, value in (line.split(": ", 1) for line in header_lines)}
    return int(status_line.split()[1]), headers, json.loads(body)


@pytest.mark.parametrize(("data", "status", "code"), [
    (b"GET /v2/calls?x=" + b"y" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 414, "uri_too_long"),
    (b"GET /v2/calls HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Tenant: " + b"a" * 9000 + b"\r\n\r\n", 431,
     "header_fields_too_large"),
    (b"GET /v2/calls HTTP/1.1 extra\r\nHost: 127.0.0.1\r\n\r\n", 400, "bad_request"),
], ids=["request-line-too-long", "header-too-large", "not-http"])
def test_gunicorns_own_refusals_are_json(served, data, status, code):
    got_status, headers, body = raw(served, data)
    assert got_status == status
    assert headers["content-type"] == "application/json"
    assert body["error"]["code"] == code
