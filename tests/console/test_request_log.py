"""One JSON line per request, with its id, tenant, route, status, duration and error
code; and no secret in any log line of a full run."""
import io
import json
import logging
import uuid

import pytest
from django.core.management import call_command
from django.test import Client

from calls_app.signing import signature_header
from console.credentials.models import ApiKey
from console.numbers.services import number_create
from console.request_log import JsonFormatter
from tests.conftest import make_client

pytestmark = pytest.mark.django_db


class CapturedLog:
    """Every line the project logs during a test, formatted as in production."""

    LOGGERS = ["", "django.request", "django.server"]

    def __init__(self):
        self.stream = io.StringIO()
        self.handler = logging.StreamHandler(self.stream)
        self.handler.setFormatter(JsonFormatter())

    def __enter__(self):
        for name in self.LOGGERS:
            logging.getLogger(name).addHandler(self.handler)
        return self

    def __exit__(self, *exc):
        for name in self.LOGGERS:
            logging.getLogger(name).removeHandler(self.handler)

    @property
    def text(self):
        return self.stream.getvalue()

    @property
    def lines(self):
        return [json.loads(line) for line in self.text.splitlines()]

    def requests(self):
        return [line for line in self.lines if line["logger"] == "console.requests"]


@pytest.fixture
def log():
    with CapturedLog() as captured:
        yield captured


def test_every_request_gets_one_line_with_its_id_tenant_route_status_and_duration(api_a, log):
    response = api_a.get("/v2/leads", HTTP_X_REQUEST_ID="bars-req-4711")

    assert response["X-Request-Id"] == "bars-req-4711"
    [line] = log.requests()
    assert line["requestId"] == "bars-req-4711" and line["tenant"] == "acme"
    assert (line["method"], line["route"], line["path"], line["status"]) == ("GET", "/v2/leads", "/v2/leads", 200)
    assert isinstance(line["durationMs"], float) and line["durationMs"] >= 0
    assert line["level"] == "INFO" and line["ts"].endswith("Z") and "error" not in line


@pytest.mark.parametrize("sent", [None, "", "a" * 129, "has space", "new\nline", "ümlaut", "-leading", "<script>"])
def test_a_request_id_that_is_missing_or_not_sane_is_replaced_by_a_new_one(api_a, log, sent):
    headers = {} if sent is None else {"HTTP_X_REQUEST_ID": sent}

    first, second = api_a.get("/v2/usage", **headers), api_a.get("/v2/usage", **headers)

    ids = [first["X-Request-Id"], second["X-Request-Id"]]
    assert ids[0] != ids[1] and all(len(value) == 32 and int(value, 16) >= 0 for value in ids)
    assert [line["requestId"] for line in log.requests()] == ids


def test_error_lines_carry_their_code(api_a, log, tenant_b):
    api_a.get("/v2/leads/ld_unknown")
    make_client("swk_000000000000_" + "x" * 43, "acme").get("/v2/usage")
    api_a.post("/v2/numbers", {"e164": "no number"}, format="json")
    api_a.get("/v2/nowhere")
    make_client(None, None).get("/admin/")

    codes = [(line["status"], line.get("error"), line["tenant"]) for line in log.requests()]
    assert codes == [(404, "not_found", "acme"), (401, "unauthenticated", None), (400, "validation_error", "acme"),
                     (404, "not_found", None), (302, None, None)]


@pytest.mark.urls("tests.console.urls_failing")
def test_a_server_error_logs_its_request_line_and_its_traceback_under_the_same_id(log):
    response = Client(raise_request_exception=False).get("/voice/__failing__/plain", HTTP_X_REQUEST_ID="boom-1")

    assert response.status_code == 500
    lines = [line for line in log.lines if line.get("requestId") == "boom-1"]
    request_line = next(line for line in lines if line["logger"] == "console.requests")
    assert request_line["level"] == "ERROR" and request_line["error"] == "internal_error"
    assert any("RuntimeError: boom in a plain view" in line.get("exc", "") for line in lines)


def test_no_secret_reaches_the_log_in_a_full_run(log, tenant_a, tenant_b, owner, django_user_model, settings):
    """Keys made in the admin and by command, a carrier's secret, signed and badly
    signed webhooks, wrong keys, sessions, passwords: none of it is in any line."""
    secrets = [settings.SECRET_KEY]
    # An operator logs in to the admin and makes a key there.
    password = "Operator-Password-" + uuid.uuid4().hex
    django_user_model.objects.create_superuser("root", "root@example.com", password)
    admin = Client()
    assert admin.post("/admin/login/?next=/admin/", {"username": "root", "password": password}).status_code == 302
    created = admin.post("/admin/credentials/apikey/add/", {"tenant": tenant_a.pk, "name": "crm"})
    admin_key = created.context["raw_key"]
    secrets += [password, admin_key, admin.cookies[settings.SESSION_COOKIE_NAME].value,
                admin.cookies[settings.CSRF_COOKIE_NAME].value]
    # Keys and a carrier by command (their output is for the operator, not the log).
    out = io.StringIO()
    call_command("create_api_key", "acme", stdout=out)
    call_command("create_api_key", "globex", stdout=out)
    call_command("create_carrier", "telco", "--caller-id", "+493055500000", stdout=out)
    key_a, key_b, carrier_secret = (line.strip() for line in out.getvalue().splitlines()[1::2])
    secrets += [key_a, key_b, carrier_secret]
    assert key_a.startswith("swk_") and key_b.startswith("swk_")

    api_a, api_b = make_client(key_a, "acme"), make_client(key_b, "globex")
    number = number_create(tenant=tenant_a, e164="+493055501234")
    requests = [
        api_a.get("/v2/assistants"), api_a.get("/v2/numbers"), api_a.get(f"/v2/numbers/{number.pk}"),
        api_a.post("/v2/numbers", {"e164": "+493055507777", "label": "zweite"}, format="json"),
        api_a.get("/v2/leads"), api_a.get("/v2/calls"), api_a.get("/v2/usage"), api_a.get("/v2/audio/settings"),
        api_a.get("/v2/audio/scripts"), api_a.get("/v2/registry/versions"), api_a.get("/v2/meta/engines"),
        api_b.get(f"/v2/numbers/{number.pk}"), api_b.get("/v2/leads"), Client().get("/health"),
        make_client(key_a, "globex").get("/v2/leads"),
        make_client(key_a[:-4] + "AAAA", "acme").get("/v2/leads"),
        make_client("swk_not_a_key", "acme").get("/v2/leads"),
        make_client(admin_key, "acme").get("/v2/usage"),
        Client().post("/v2/public/leads", {"tenant": "acme", "kind": "callback", "phone": "0171 2345678"},
                      content_type="application/json", HTTP_IDEMPOTENCY_KEY="lead-key-1"),
    ]
    for event_type, data in (
        ("call.started", {"carrierCallId": "CA1", "direction": "inbound", "from": "+491711234567",
                          "to": number.e164}),
        ("call.transcript", {"carrierCallId": "CA1", "role": "user", "text": "Hallo", "ts": "2025-03-01T10:00:00Z"}),
        ("call.ended", {"carrierCallId": "CA1", "status": "completed", "seconds": 30}),
    ):
        body = json.dumps({"id": f"evt_{uuid.uuid4().hex}", "type": event_type,
                           "occurredAt": "2025-03-01T10:00:00Z", "data": data}).encode()
        signature = signature_header(carrier_secret, body)
        secrets.append(signature.split("v1=")[1])
        requests.append(Client().post("/voice/webhook/telco", body, content_type="application/json",
                                      HTTP_X_SIGNATURE=signature))
    requests.append(Client().post("/voice/webhook/telco", b"{}", content_type="application/json",
                                  HTTP_X_SIGNATURE="t=1,v1=" + "0" * 64))
    # The admin key is revoked; the next request with it is refused.
    admin.post("/admin/credentials/apikey/", {"action": "revoke",
                                              "_selected_action": [ApiKey.objects.get(name="crm").pk]})
    requests.append(make_client(admin_key, "acme").get("/v2/usage"))

    statuses = [response.status_code for response in requests]
    assert statuses[:19] == [
        200, 200, 200, 201, 200, 200, 200, 200, 200, 200, 200,  # tenant A's key
        404, 200, 200,  # B's key on A's number, B's leads, /health
        403, 401, 401, 200,  # A's key for B, a wrong key, garbage, the admin's key
        201,  # a public lead
    ]
    assert all(200 <= status < 300 for status in statuses[19:22])  # the signed events
    assert statuses[22:] == [401, 401]  # a bad signature, the revoked key
    for secret in secrets:
        assert secret and secret not in log.text, f"{secret[:8]}… is in the log"
    assert "+491712345678" not in log.text and "0171 2345678" not in log.text  # no bodies either
    # One line per request: the API requests above plus the admin's (login, key, revoke, …).
    request_ids = [line["requestId"] for line in log.requests()]
    assert len(request_ids) == len(set(request_ids)) >= len(requests)
    assert {response["X-Request-Id"] for response in requests} <= set(request_ids)


def test_a_line_holds_any_value_on_one_readable_line(log):
    # orjson writes the lines; what it refuses (an integer beyond 64 bits) is written too.
    logging.getLogger("console.test").warning("Anruf von %s", "Jürgen", extra={"fields": {
        "big": 2**70, "when": uuid.UUID(int=7), "text": "Grüße\nzweite Zeile"}})
    logging.getLogger("console.test").warning("klein", extra={"fields": {"small": 2**63 - 1}})
    assert log.text.count("\n") == 2 and "Jürgen" in log.text
    big, small = log.lines
    assert big["message"] == "Anruf von Jürgen" and big["big"] == 2**70
    assert big["when"] == str(uuid.UUID(int=7)) and big["text"] == "Grüße\nzweite Zeile"
    assert small["small"] == 2**63 - 1
