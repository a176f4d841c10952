"""probe_registry against a running server: this service's own lanes (the gateway's
mock lane, the speech module's engines) come out healthy, through their real
credentialed health paths."""
import copy
import io

import pytest
from django.core.management import CommandError, call_command

from registry_app.models import LaneHealth
from registry_app.routing import route
from registry_app.services import lane_cooldown_start, registry_load
from tests.gateway_app.conftest import SHIPPED

OWN_LANES = ("chat-gateway-mock", "stt-vosk-de", "tts-espeak-de")


@pytest.fixture
def own_lanes_only(transactional_db):
    document = copy.deepcopy(SHIPPED)
    document["models"] = [entry for entry in document["models"] if entry["id"] in OWN_LANES]
    registry_load(document=document, loaded_by="tests")


def test_the_services_own_lanes_are_healthy(own_lanes_only, live_server, korean_model, render_cache_dir):
    out = io.StringIO()
    call_command("probe_registry", "--base-url", live_server.url, "--timeout", "20", stdout=out)  # exits 0
    results = {health.lane_id: (health.ok, health.target) for health in LaneHealth.objects.all()}
    assert results == {
        "chat-gateway-mock": (True, f"{live_server.url}/v1/ready"),
        "stt-vosk-de": (True, f"{live_server.url}/api/voice/health"),
        "tts-espeak-de": (True, f"{live_server.url}/api/voice/health"),
    }
    assert "3 probed, 0 failed, 0 skipped." in out.getvalue()
    assert [candidate.lane.id for candidate in route("tts").candidates] == ["tts-espeak-de"]


def test_a_gateway_without_a_usable_chat_lane_fails_its_probe_and_the_command(own_lanes_only, live_server,
                                                                             korean_model, render_cache_dir):
    lane_cooldown_start(lane_id="chat-gateway-mock", seconds=60, reason="server_error: test")
    with pytest.raises(CommandError) as failure:
        call_command("probe_registry", "--base-url", live_server.url, "--timeout", "20", stdout=io.StringIO())
    assert str(failure.value) == "1 live lane(s) failed their health check: chat-gateway-mock."
    health = LaneHealth.objects.get(lane_id="chat-gateway-mock")
    assert (health.ok, health.detail) == (False, "HTTP 503")  # /v1/ready: no chat lane usable now
