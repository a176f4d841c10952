"""The router: CONTRACT §7's order, reasons for every place, and every lane left out."""
import datetime
import json

import pytest
from django.utils import timezone

from registry_app.routing import DEGRADED_WINDOW, pick_lane, route
from registry_app.services import lane_cooldown_clear, lane_cooldown_start, lane_health_record
from tests.conftest import error_of, make_client
from tests.registry_app.conftest import lane, load


@pytest.fixture
def api(key_a):
    return make_client(key_a)


# The shipped registry's paid German tts lanes in the router's order (status, price, priority).
PAID_TTS = ["tts-azure-de", "tts-cartesia-de", "tts-elevenlabs"]

def candidate_ids(body):
    return [candidate["lane"] for candidate in body["candidates"]]


def excluded(body):
    return {item["lane"]: item["reason"] for item in body["excluded"]}


def tts_lane(lane_id, **changes):
    entry = {
        "id": lane_id, "name": lane_id, "capability": "tts", "provider": "Test", "hosting": "api",
        "access": "api-key", "endpoint": f"https://{lane_id}.example/speak", "health": None,
        "cost": {"model": "per-character", "unit": "1k chars", "eur": 0.1}, "status": "key-ready",
        "priority": 10, "quality_tier": "high", "latency_class": "fast",
        "params": {"streaming": True, "languages": ["de"]}, "test": "", "source": "", "notes": "",
    }
    entry.update(changes)
    return entry


def test_tts_in_german_routes_live_free_lane_before_paid_key_ready_lane(loaded, api):
    response = api.get("/v2/registry/route?capability=tts&language=de")
    assert response.status_code == 200
    body = response.json()
    assert candidate_ids(body) == ["tts-espeak-de", *PAID_TTS]
    first, second = body["candidates"][:2]
    assert (first["rank"], second["rank"]) == (1, 2)
    assert first["model"] == lane(loaded, "tts-espeak-de")
    assert "live: usable now" in first["reasons"] and "zero-euro cost (self-hosted)" in first["reasons"]
    assert "paid per use: 14.5 EUR per 1M chars" in second["reasons"]
    assert "after tts-espeak-de: status key-ready ranks after live" in second["reasons"]
    assert excluded(body) == {
        "tts-piper-de": "status module-ready is not usable (only live and key-ready lanes are routed)",
    }


def test_route_is_deterministic(loaded, api):
    answers = {json.dumps(api.get("/v2/registry/route?capability=tts&language=de").json()) for _ in range(3)}
    assert len(answers) == 1


def test_allow_paid_0_drops_paid_lanes_with_the_reason(loaded, api):
    body = api.get("/v2/registry/route?capability=tts&language=de&allow_paid=0").json()
    assert candidate_ids(body) == ["tts-espeak-de"]
    assert excluded(body)["tts-azure-de"] == "paid per use (14.5 EUR per 1M chars); excluded by allow_paid=0"


def test_unknown_price_is_never_free(loaded, api):
    # Same status, the best priority: still after every known price, and not free.
    loaded["models"] += [tts_lane("tts-mystery", cost={"model": "per-character", "unit": "1k chars", "eur": None},
                                  priority=1),
                         tts_lane("tts-cheap", priority=90)]
    load(loaded)
    body = api.get("/v2/registry/route?capability=tts&language=de").json()
    assert candidate_ids(body) == ["tts-espeak-de", *PAID_TTS, "tts-cheap", "tts-mystery"]
    mystery = body["candidates"][-1]
    assert "price unknown: ranked after lanes with known prices, never as free" in mystery["reasons"]
    assert "after tts-cheap: unknown price ranks after paid per use" in mystery["reasons"]
    free_only = api.get("/v2/registry/route?capability=tts&language=de&allow_paid=0").json()
    assert candidate_ids(free_only) == ["tts-espeak-de"]
    assert "not known to be free" in excluded(free_only)["tts-mystery"]


def test_order_follows_the_whole_sort_key(loaded, api):
    loaded["models"] += [
        tts_lane("tts-e", priority=5, quality_tier="mid"),
        tts_lane("tts-d", priority=5, quality_tier="high", latency_class="slow"),
        tts_lane("tts-c", priority=5, quality_tier="high", latency_class="fast"),
        tts_lane("tts-b", priority=5, quality_tier="high", latency_class="fast"),
        tts_lane("tts-a", priority=7, quality_tier="frontier"),
        tts_lane("tts-credit", cost={"model": "per-character", "unit": "1k chars", "eur": 0}, priority=99),
    ]
    load(loaded)
    body = api.get("/v2/registry/route?capability=tts").json()
    assert candidate_ids(body) == ["tts-espeak-de", "tts-credit", "tts-b", "tts-c", "tts-d", "tts-e", "tts-a",
                                   *PAID_TTS]
    reasons = {c["lane"]: c["reasons"][-1] for c in body["candidates"]}
    assert reasons == {
        "tts-espeak-de": "ranked first",
        "tts-credit": "after tts-espeak-de: status key-ready ranks after live",
        "tts-b": "after tts-credit: paid per use ranks after zero-euro",
        "tts-c": "after tts-b: equal otherwise; ordered by id",
        "tts-d": "after tts-c: latency slow after fast",
        "tts-e": "after tts-d: quality tier mid after high",
        "tts-a": "after tts-e: priority 7 after 5",
        "tts-azure-de": "after tts-a: priority 50 after 7",
        "tts-cartesia-de": "after tts-azure-de: priority 55 after 50",
        "tts-elevenlabs": "after tts-cartesia-de: priority 60 after 55",
    }
    assert "zero-euro cost (existing credit)" in body["candidates"][1]["reasons"]


def test_language_streaming_and_min_quality_exclude_with_reasons(loaded, api):
    body = api.get("/v2/registry/route?capability=stt&language=en&streaming=1").json()
    assert candidate_ids(body) == ["stt-deepgram"]  # key-ready: its protocol module makes it callable
    assert excluded(body)["stt-vosk-de"] == "does not support language en (supports de)"
    body = api.get("/v2/registry/route?capability=tts&streaming=1").json()
    assert candidate_ids(body) == PAID_TTS and excluded(body)["tts-espeak-de"] == "does not stream"
    body = api.get("/v2/registry/route?capability=tts&min_quality=high").json()
    assert candidate_ids(body) == PAID_TTS
    assert excluded(body)["tts-espeak-de"] == "quality tier mid is below high"


def test_every_lane_of_the_capability_is_either_candidate_or_excluded(loaded, api):
    for capability in loaded["capabilities"]:
        body = api.get(f"/v2/registry/route?capability={capability}&language=de&allow_paid=0").json()
        listed = candidate_ids(body) + list(excluded(body))
        assert sorted(listed) == sorted(m["id"] for m in loaded["models"] if m["capability"] == capability)


def test_one_failed_probe_does_not_degrade_a_lane_but_two_in_a_row_do(loaded, api):
    def fail():
        lane_health_record(lane_id="tts-espeak-de", target="http://127.0.0.1:8000/api/voice/health", ok=False,
                           detail="HTTP 503")

    fail()
    assert candidate_ids(api.get("/v2/registry/route?capability=tts").json())[0] == "tts-espeak-de"
    fail()
    body = api.get("/v2/registry/route?capability=tts").json()
    assert candidate_ids(body) == PAID_TTS
    assert excluded(body)["tts-espeak-de"].startswith("degraded: 2 health probes failed in a row, the last at ")
    assert excluded(body)["tts-espeak-de"].endswith(": HTTP 503")
    assert {e["lane"]: e["code"] for e in body["excluded"]}["tts-espeak-de"] == "degraded"


def test_old_failed_probes_or_a_later_success_do_not_exclude(loaded):
    long_ago = timezone.now() - DEGRADED_WINDOW - datetime.timedelta(minutes=1)
    for _ in range(2):
        lane_health_record(lane_id="tts-espeak-de", target="x", ok=False, checked_at=long_ago)
    assert pick_lane("tts").id == "tts-espeak-de"
    lane_health_record(lane_id="tts-espeak-de", target="x", ok=False)  # the third in a row, recent
    assert pick_lane("tts").id == "tts-azure-de"
    lane_health_record(lane_id="tts-espeak-de", target="x", ok=True)
    assert pick_lane("tts").id == "tts-espeak-de"
    lane_health_record(lane_id="tts-espeak-de", target="x", ok=False)  # counting starts again after a success
    assert pick_lane("tts").id == "tts-espeak-de"


def test_a_lane_in_cooldown_is_left_out_until_the_cooldown_ends(loaded, api):
    now = timezone.now()
    lane_cooldown_start(lane_id="tts-espeak-de", seconds=30, reason="connection refused", now=now)
    lane_cooldown_start(lane_id="tts-espeak-de", seconds=30, reason="timeout after 2.0 s", now=now)
    body = api.get("/v2/registry/route?capability=tts").json()
    assert candidate_ids(body) == PAID_TTS
    code = {e["lane"]: e["code"] for e in body["excluded"]}["tts-espeak-de"]
    assert code == "cooldown"
    assert excluded(body)["tts-espeak-de"] == (
        f"cooldown until {(now + datetime.timedelta(seconds=30)).isoformat()} after 2 failed calls in a row: "
        "timeout after 2.0 s")
    later = now + datetime.timedelta(seconds=31)
    assert [c.lane.id for c in route("tts", now=later).candidates] == ["tts-espeak-de", *PAID_TTS]
    lane_cooldown_clear(lane_id="tts-espeak-de")
    assert pick_lane("tts").id == "tts-espeak-de"


def test_cooldown_is_reported_only_for_lanes_the_query_would_use(loaded):
    lane_cooldown_start(lane_id="tts-azure-de", seconds=30, reason="HTTP 503")
    codes = {e.lane.id: e.code for e in route("tts", allow_paid=False).excluded}
    assert codes["tts-azure-de"] == "paid"


def test_max_latency_leaves_out_slower_lanes(loaded, api):
    body = api.get("/v2/registry/route?capability=chat&max_latency=fast").json()
    assert "chat-llama-local" not in candidate_ids(body)
    assert excluded(body)["chat-llama-local"] == "latency medium is slower than fast"
    assert "chat-llama-local" in candidate_ids(api.get("/v2/registry/route?capability=chat&max_latency=medium").json())


def test_pick_lane_for_the_engines(loaded):
    chosen = pick_lane("stt", language="de")
    assert chosen.id == "stt-whisper-base" and chosen.entry["endpoint"] == "/api/voice/transcribe"
    assert pick_lane("stt", language="ko") is None


def test_without_a_registry_nothing_is_routed(db):
    result = route("tts")
    assert (result.candidates, result.excluded, result.version) == ((), (), None)
    assert pick_lane("tts") is None


def test_route_follows_a_new_load_in_this_and_other_processes(loaded):
    assert pick_lane("tts").id == "tts-espeak-de"
    lane(loaded, "tts-espeak-de")["status"] = "degraded"
    load(loaded)  # the snapshot is keyed by version number and hash, not only dropped on commit
    assert pick_lane("tts").id == "tts-azure-de"


@pytest.mark.parametrize("query, field", [("", "capability"), ("capability=vision", "capability"),
                                          ("capability=tts&language=Deutsch", "language"),
                                          ("capability=tts&min_quality=best", "min_quality"),
                                          ("capability=tts&max_latency=instant", "max_latency"),
                                          ("capability=tts&allow_paid=maybe", "allow_paid"),
                                          ("capability=tts&streaming=2", "streaming")])
def test_bad_route_parameters_are_field_errors(loaded, api, query, field):
    response = api.get(f"/v2/registry/route?{query}")
    assert response.status_code == 400
    assert field in error_of(response)["details"]


def test_a_cooldown_written_by_another_process_is_seen_within_a_second(loaded, monkeypatch):
    from registry_app import routing
    from registry_app.models import LaneCooldown

    assert pick_lane("tts").id == "tts-espeak-de"  # the lanes' state is read and kept
    LaneCooldown.objects.create(lane_id="tts-espeak-de", until=timezone.now() + datetime.timedelta(seconds=30))
    assert pick_lane("tts").id == "tts-espeak-de"  # another process's write: not yet seen
    later = routing.time.monotonic() + routing.LANE_STATE_SECONDS + 0.01
    monkeypatch.setattr(routing.time, "monotonic", lambda: later)
    assert pick_lane("tts").id == "tts-azure-de"


def test_this_processs_own_cooldowns_are_seen_at_once(loaded):
    assert pick_lane("tts").id == "tts-espeak-de"
    lane_cooldown_start(lane_id="tts-espeak-de", seconds=30, reason="timeout")
    assert pick_lane("tts").id == "tts-azure-de"
    lane_cooldown_clear(lane_id="tts-espeak-de")
    assert pick_lane("tts").id == "tts-espeak-de"
