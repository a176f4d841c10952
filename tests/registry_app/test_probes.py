"""probe_registry against a real HTTP server on the loopback interface."""
import io
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.management import CommandError, call_command

from registry_app.models import LaneHealth
from registry_app.probes import is_loopback, plan_probe
from registry_app.routing import pick_lane
from tests.conftest import error_of, make_client
from tests.registry_app.conftest import lane, load


class _Health(BaseHTTPRequestHandler):
    answers = {"/ok": 200, "/broken": 503, "/moved": 302}
    bodies = {"/says-not-ok": b'{"ok": false}',
              "/tts-unusable": b'{"ok": false, "engines": [{"kind": "tts", "usableNow": false, "reason": "no voice"},'
                               b' {"kind": "stt", "usableNow": true}]}'}
    authorizations: dict[str, str | None] = {}  # path: the Authorization header it came with

    def do_GET(self):
        self.authorizations[self.path] = self.headers.get("Authorization")
        body = self.bodies.get(self.path, b"")
        self.send_response(200 if body else self.answers.get(self.path, 404))
        if self.path == "/moved":
            self.send_header("Location", "http://192.0.2.1/elsewhere")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def health_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def probe(*args):
    """The command's output; it must succeed (exit 0)."""
    out = io.StringIO()
    call_command("probe_registry", *args, stdout=out)
    return out.getvalue()


def failing_probe(*args):
    """The command's output and its error; it must fail (exit 1 from the command line)."""
    out = io.StringIO()
    with pytest.raises(CommandError) as failure:
        call_command("probe_registry", *args, stdout=out)
    return out.getvalue(), str(failure.value)


def only_lanes(document, *lane_ids):
    document["models"] = [entry for entry in document["models"] if entry["id"] in lane_ids]
    return document


def test_probe_records_results_and_the_router_uses_them(loaded, health_server):
    # No lane whose health is a path of this service: nothing goes to the default base URL.
    only_lanes(loaded, "tts-espeak-de", "tts-azure-de", "chat-llama-local", "stt-vosk-de")
    lane(loaded, "tts-espeak-de")["health"] = f"{health_server}/broken"
    lane(loaded, "chat-llama-local")["endpoint"] = f"{health_server}/api/chat"
    lane(loaded, "chat-llama-local")["health"] = "/ok"  # a path of the lane's loopback endpoint
    lane(loaded, "stt-vosk-de")["health"] = f"{health_server}/moved"
    load(loaded)
    out, error = failing_probe()
    results = {h.lane_id: (h.ok, h.detail) for h in LaneHealth.objects.all()}
    assert results["tts-espeak-de"] == (False, "HTTP 503")
    assert results["chat-llama-local"][0] is True
    assert results["stt-vosk-de"] == (False, "HTTP 302")  # redirects are not followed
    assert f"FAIL tts-espeak-de: {health_server}/broken (HTTP 503) [1 in a row: not yet degraded]" in out
    assert error == "2 live lane(s) failed their health check: stt-vosk-de, tts-espeak-de."
    assert pick_lane("tts").id == "tts-espeak-de"  # one failure is not yet degraded
    out, _ = failing_probe()
    assert "(HTTP 503) [2 in a row: degraded]" in out
    assert pick_lane("tts").id == "tts-azure-de"


def test_a_failing_lane_that_is_not_live_does_not_fail_the_command(loaded, health_server):
    only_lanes(loaded, "tts-espeak-de", "tts-piper-de")
    lane(loaded, "tts-espeak-de")["health"] = f"{health_server}/ok"
    lane(loaded, "tts-piper-de")["health"] = f"{health_server}/broken"  # module-ready
    load(loaded)
    assert "2 probed, 1 failed, 0 skipped." in probe()


def test_an_answer_that_says_the_lane_does_not_work_is_a_failure(loaded, health_server):
    only_lanes(loaded, "tts-espeak-de", "stt-vosk-de", "chat-llama-local")
    lane(loaded, "tts-espeak-de")["health"] = f"{health_server}/tts-unusable"
    lane(loaded, "stt-vosk-de")["health"] = f"{health_server}/tts-unusable"  # its stt engine is usable
    lane(loaded, "chat-llama-local")["health"] = f"{health_server}/says-not-ok"
    load(loaded)
    out, error = failing_probe()
    results = {h.lane_id: (h.ok, h.detail) for h in LaneHealth.objects.all()}
    assert results["tts-espeak-de"][0] is False
    assert results["tts-espeak-de"][1].endswith(", but no usable tts engine: no voice")
    assert results["stt-vosk-de"][0] is True
    assert results["chat-llama-local"][1].endswith(", but the answer says ok: false")
    assert error == "2 live lane(s) failed their health check: chat-llama-local, tts-espeak-de."


def test_the_probe_credential_goes_to_this_service_only(loaded, health_server):
    only_lanes(loaded, "chat-llama-local", "tts-espeak-de")
    lane(loaded, "chat-llama-local")["health"] = f"{health_server}/ok"  # another service on this machine
    lane(loaded, "tts-espeak-de")["health"] = "/api/voice/health"  # this service, reached at --base-url
    load(loaded)
    _Health.authorizations.clear()
    failing_probe("--base-url", health_server)  # the fake answers 404 to /api/voice/health
    assert _Health.authorizations["/ok"] is None
    assert _Health.authorizations["/api/voice/health"].startswith("Bearer probe.")


def test_unreachable_loopback_target_is_a_failure(loaded):
    only_lanes(loaded, "tts-espeak-de")
    with socket.socket() as closed:  # a port that was bound and is no longer listening
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    lane(loaded, "tts-espeak-de")["health"] = f"http://127.0.0.1:{port}/x"
    load(loaded)
    failing_probe("--timeout", "1")
    health = LaneHealth.objects.get(lane_id="tts-espeak-de")
    assert health.ok is False and health.detail.startswith("unreachable")


def test_remote_targets_are_skipped_unless_allowed(registry_document):
    entry = lane(registry_document, "tts-azure-de")
    entry["health"] = "https://status.example.com/health"
    assert plan_probe(entry).url is None
    assert "remote" in plan_probe(entry).skip_reason
    assert plan_probe(entry, allow_remote=True).url == "https://status.example.com/health"


def test_path_of_a_remote_endpoint_is_remote(registry_document):
    entry = lane(registry_document, "chat-mistral-api")
    entry["health"] = "/v1/models"
    assert plan_probe(entry).url is None


def test_health_path_that_this_service_does_not_serve_is_skipped(registry_document):
    entry = lane(registry_document, "chat-gateway-mock")
    entry["health"] = "/v9/ready"
    plan = plan_probe(entry)
    assert (plan.url, plan.skip_reason) == (None, "not a path of this service")


def test_health_path_of_this_service_is_called_on_the_base_url(registry_document):
    entry = lane(registry_document, "tts-espeak-de")
    entry["health"] = "/health"
    assert plan_probe(entry, base_url="http://127.0.0.1:9000").url == "http://127.0.0.1:9000/health"


def test_remote_base_url_is_not_probed_without_permission(registry_document):
    entry = lane(registry_document, "tts-espeak-de")
    entry["health"] = "/health"
    assert plan_probe(entry, base_url="https://console.example.com").url is None


def test_non_http_health_checks_are_skipped(registry_document):
    entry = lane(registry_document, "tts-espeak-de")
    entry["health"] = "systemd:piper.service"
    assert plan_probe(entry).skip_reason == "not an HTTP health check"


@pytest.mark.parametrize("host, expected", [("127.0.0.1", True), ("127.8.0.1", True), ("::1", True),
                                            ("localhost", True), ("api.localhost", True), ("10.0.0.1", False),
                                            ("example.com", False), ("", False)])
def test_loopback_hosts(host, expected):
    assert is_loopback(host) is expected


def test_probe_without_a_registry_fails(db):
    with pytest.raises(CommandError, match="No registry"):
        probe()


def test_the_probe_credential_reads_the_speech_module_health_and_nothing_else(db, korean_model):
    from registry_app.probe_auth import probe_credential

    client = make_client(probe_credential())
    response = client.get("/api/voice/health")
    assert response.status_code == 200 and response.json()["engines"]
    assert client.post("/api/voice/speak", {"text": "Hallo"}, format="json").status_code == 401
    assert client.get("/v2/registry/route?capability=tts").status_code == 401


@pytest.mark.parametrize("credential", ["probe.", "probe.123.abc", "probe.x.y"])
def test_a_wrong_probe_credential_is_refused(db, credential):
    response = make_client(credential).get("/api/voice/health")
    assert response.status_code == 401
    assert error_of(response)["code"] == "unauthenticated"


def test_an_expired_probe_credential_is_refused(db):
    import time

    from registry_app.probe_auth import VALID_SECONDS, probe_credential

    stale = probe_credential(now=time.time() - VALID_SECONDS - 5)
    assert make_client(stale).get("/api/voice/health").status_code == 401
