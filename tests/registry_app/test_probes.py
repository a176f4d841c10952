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
from tests.registry_app.conftest import lane, load


class _Health(BaseHTTPRequestHandler):
    answers = {"/ok": 200, "/broken": 503, "/moved": 302}

    def do_GET(self):
        self.send_response(self.answers.get(self.path, 404))
        if self.path == "/moved":
            self.send_header("Location", "http://192.0.2.1/elsewhere")
        self.send_header("Content-Length", "0")
        self.end_headers()

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
    out = io.StringIO()
    call_command("probe_registry", *args, stdout=out)
    return out.getvalue()


def test_probe_records_results_and_the_router_uses_them(loaded, health_server):
    lane(loaded, "tts-espeak-de")["health"] = f"{health_server}/broken"
    lane(loaded, "chat-llama-local")["endpoint"] = f"{health_server}/api/chat"
    lane(loaded, "chat-llama-local")["health"] = "/ok"  # a path of the lane's loopback endpoint
    lane(loaded, "stt-vosk-de")["health"] = f"{health_server}/moved"
    load(loaded)
    out = probe()
    results = {h.lane_id: (h.ok, h.detail) for h in LaneHealth.objects.all()}
    assert results["tts-espeak-de"] == (False, "HTTP 503")
    assert results["chat-llama-local"][0] is True
    assert results["stt-vosk-de"] == (False, "HTTP 302")  # redirects are not followed
    assert f"FAIL tts-espeak-de: {health_server}/broken (HTTP 503)" in out
    assert pick_lane("tts").id == "tts-espeak-de"  # one failure is not yet degraded
    probe()
    assert pick_lane("tts").id == "tts-azure-de"


def test_unreachable_loopback_target_is_a_failure(loaded):
    with socket.socket() as closed:  # a port that was bound and is no longer listening
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    lane(loaded, "tts-espeak-de")["health"] = f"http://127.0.0.1:{port}/x"
    load(loaded)
    probe("--timeout", "1")
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
    entry = lane(registry_document, "chat-gateway-mock")  # /v1/ready belongs to the gateway
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
