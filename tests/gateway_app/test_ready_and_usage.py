"""GET /v1/ready (mode, usable lanes, cooldowns; 503 when no chat lane is usable) and
the usage accounting per lane and day (GET /v1/usage, the admin)."""
import datetime
from decimal import Decimal

import pytest
from django.utils import timezone

from gateway_app.models import LaneUsage
from gateway_app.planning import BUILTIN_MOCK_LANE
from gateway_app.services import lane_usage_add
from registry_app.models import LaneCooldown
from registry_app.probe_auth import probe_credential
from registry_app.routing import invalidate_lane_state
from registry_app.services import lane_cooldown_start
from tests.conftest import error_of, make_client
from tests.gateway_app.conftest import SHIPPED, chat_lane, load_document, load_lanes


def states(body):
    return {lane["lane"]: lane for lane in body["lanes"]}


def test_ready_on_the_shipped_registry_lists_every_lane_and_why(gateway):
    load_document(SHIPPED)
    response = gateway.get("/v1/ready")
    assert response.status_code == 200
    body = response.json()
    assert (body["ready"], body["mode"], body["cooldowns"]) == (True, "mock", [])
    lanes = states(body)
    assert lanes["chat-gateway-mock"]["usable"] is True and lanes["chat-gateway-mock"]["mode"] == "mock"
    assert lanes["chat-mistral-api"]["price"] == "paid"
    assert lanes["tts-azure-de"] == {"lane": "tts-azure-de", "capability": "tts", "mode": "api", "usable": False,
                                     "price": "paid", "reason": "speaks the streaming protocol azure-tts: used by the voice agent only"}
    assert lanes["tts-espeak-de"]["mode"] == "local"


def test_in_live_mode_lanes_without_a_way_or_a_key_are_not_usable(gateway, settings):
    settings.GATEWAY_MODE = "live"
    load_document(SHIPPED)
    lanes = states(gateway.get("/v1/ready").json())
    assert lanes["chat-llama-local"]["usable"] is True  # its endpoint is a loopback URL
    assert lanes["chat-mistral-api"] == {"lane": "chat-mistral-api", "capability": "chat", "mode": "api",
                                         "usable": False, "price": "paid",
                                         "reason": "no key: set GATEWAY_KEY_CHAT_MISTRAL_API"}


def test_ready_shows_cooldowns_until_when_and_is_503_without_a_usable_chat_lane(gateway, settings):
    settings.GATEWAY_MODE = "live"
    load_lanes(chat_lane("chat-only", endpoint="http://127.0.0.1:9/v1/chat/completions"))
    cooldown = lane_cooldown_start(lane_id="chat-only", seconds=30, reason="connection_error: refused")
    response = gateway.get("/v1/ready")
    assert response.status_code == 503
    error = error_of(response)
    assert error["code"] == "not_ready"
    details = error["details"]
    assert details["ready"] is False
    assert details["cooldowns"] == [{"lane": "chat-only", "until": cooldown.until.isoformat().replace("+00:00", "Z"),
                                     "failures": 1, "reason": "connection_error: refused"}]
    assert states(details)["chat-only"]["reason"].startswith("cooldown until ")


def test_ready_answers_the_probe_credential(db):
    assert make_client(probe_credential()).get("/v1/ready").status_code == 200
    assert make_client(probe_credential()).post("/v1/agent", {"prompt": "ping"}, format="json").status_code == 401


def test_every_answer_and_failure_is_counted_per_lane_and_day(gateway, settings, provider, lane_settings):
    settings.GATEWAY_MODE = "live"
    failing, paid = provider("fail"), provider("answer", usage=(100, 50))
    load_lanes(chat_lane("chat-free", endpoint=failing.url), chat_lane("chat-paid", endpoint=paid.url, eur=2.0))
    lane_settings("chat-paid", key="sk")
    for _ in range(2):
        gateway.post("/v1/agent", {"prompt": "Hallo", "max_eur": 1}, format="json")
        LaneCooldown.objects.all().delete()  # so that the free lane is tried (and fails) again
        invalidate_lane_state()
    today = timezone.now().date()
    free = LaneUsage.objects.get(lane_id="chat-free")
    assert (free.day, free.requests, free.failures, free.mode) == (today, 0, 2, "api")
    used = LaneUsage.objects.get(lane_id="chat-paid")
    assert (used.requests, used.input_tokens, used.output_tokens) == (2, 200, 100)
    assert used.eur == Decimal("0.000600")

    body = gateway.get("/v1/usage").json()
    assert body["to"] == today.isoformat()
    assert body["from"] == (today - datetime.timedelta(days=29)).isoformat()
    assert {row["lane"]: (row["requests"], row["failures"], row["eur"]) for row in body["usage"]} == {
        "chat-free": (0, 2, 0.0), "chat-paid": (2, 0, 0.0006)}
    assert body["totals"] == {"requests": 2, "failures": 2, "eur": 0.0006}
    only = gateway.get("/v1/usage?lane=chat-paid").json()
    assert [row["lane"] for row in only["usage"]] == ["chat-paid"]


def test_usage_of_another_period_is_not_shown(gateway):
    LaneUsage.objects.create(day=datetime.date(2026, 1, 15), lane_id="chat-x", capability="chat", mode="api",
                             requests=3)
    assert gateway.get("/v1/usage").json()["usage"] == []
    january = gateway.get("/v1/usage?from=2026-01-01&to=2026-01-31").json()
    assert [(row["day"], row["requests"]) for row in january["usage"]] == [("2026-01-15", 3)]


@pytest.mark.parametrize("query", ["from=2026-13-01", "from=yesterday", "from=2026-02-01&to=2026-01-01",
                                   "from=2024-01-01&to=2026-01-01"])
def test_bad_usage_periods_are_field_errors(gateway, query):
    response = gateway.get(f"/v1/usage?{query}")
    assert response.status_code == 400 and "from" in error_of(response)["details"]


def test_a_days_row_is_added_to_not_replaced(db):
    day = datetime.date(2026, 3, 1)
    LaneUsage.objects.create(day=day, lane_id=BUILTIN_MOCK_LANE.id, capability="chat", mode="mock", requests=1)
    lane_usage_add(lane=BUILTIN_MOCK_LANE, mode="mock", day=day, requests=1, characters=5)
    row = LaneUsage.objects.get(day=day)
    assert (row.requests, row.characters) == (2, 5)
    with pytest.raises(TypeError):
        lane_usage_add(lane=BUILTIN_MOCK_LANE, mode="mock", seconds=1)
