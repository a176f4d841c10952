"""The gateway's reads: readiness and usage."""
import datetime as dt
from typing import Any, NoReturn

from django.db.models import Sum
from django.utils import timezone

from console.engines import engine_probes, lane_status
from gateway_app.models import LaneUsage
from gateway_app.planning import BUILTIN_MOCK_LANE, ChatQuery, chat_lane_mode, chat_step
from registry_app import snapshot
from registry_app.lanes.config import gateway_mode
from registry_app.lanes.failover import Step
from registry_app.lanes.plans import budget_skip, ordered_lanes
from registry_app.models import LaneHealth
from registry_app.routing import active_cooldowns, price_group, route
from speech_app.lanes import BUILTIN_LOCAL_LANES, stt_plan, tts_plan

PRICE_NAMES = ("zero-euro", "paid", "unknown")


def _lane_state(step: Step) -> dict[str, Any]:
    state = {"lane": step.lane.id, "capability": step.lane.capability, "mode": step.mode,
             "usable": step.call is not None, "price": PRICE_NAMES[price_group(step.lane.eur)]}
    if step.skip:
        state["reason"] = step.skip[1]
    return state


def chat_lane_states(capability: str) -> tuple[int | None, list[dict[str, Any]]]:
    """(registry version, [state]): each chat (or code) lane the gateway could try,
    usable now or why not (whatever the budget)."""
    probe = ChatQuery(prompt="", capability=capability)
    routed = route(capability)
    if routed.version is None:
        builtin = [BUILTIN_MOCK_LANE] if capability == "chat" else []
        return None, [_lane_state(chat_step(lane, None, probe, float("inf"))) for lane in builtin]
    return routed.version, [_lane_state(chat_step(lane, cooldown, probe, float("inf")))
                            for lane, cooldown in ordered_lanes(routed)]


def _never_called(*args: Any) -> NoReturn:
    raise AssertionError("readiness never calls a lane")


def voice_lane_states(capability: str) -> list[dict[str, Any]]:
    """[state] of each tts or stt lane, as /v1/speak and /v1/transcribe would plan them
    (any language, any budget): the local ones usable when an engine of this process
    serves them now, the remote ones when they can be called (an HTTP endpoint, and a
    key where the lane is a hosted API)."""
    engines = engine_probes.statuses()
    plan = (tts_plan if capability == "tts" else stt_plan)(None, always_local=False)
    steps = []
    for item in plan.lanes:
        if item.skip:
            steps.append(Step(item.lane, item.mode, skip=item.skip))
        elif item.mode == "api":
            skip = budget_skip(item.lane, 0.0, float("inf"))  # price unknown: never called
            steps.append(Step(item.lane, "api", skip=skip, call=None if skip else _never_called))
        elif (any(engine.usable_now for engine in engines if engine.kind == capability)
              if item.lane is BUILTIN_LOCAL_LANES[capability] else lane_status(item.lane, engines)["usableNow"]):
            steps.append(Step(item.lane, "local", call=_never_called))
        else:
            steps.append(Step(item.lane, "local", skip=("unavailable", "no engine of this process can serve it now")))
    return [_lane_state(step) for step in steps]


def gateway_readiness() -> dict[str, Any]:
    """GET /v1/ready: ready when at least one chat lane is usable now."""
    version, chat = chat_lane_states("chat")
    _, code = chat_lane_states("code")
    lanes = chat + code + voice_lane_states("tts") + voice_lane_states("stt")
    # As text here: the 503 body is rendered by Django's encoder, which would cut the microseconds.
    cooldowns = [{"lane": cooldown.lane_id, "until": cooldown.until.isoformat().replace("+00:00", "Z"),
                  "failures": cooldown.failures,
                  "reason": cooldown.reason} for cooldown in active_cooldowns(timezone.now()).values()]
    return {
        "ready": any(lane["usable"] for lane in chat),
        "mode": gateway_mode(),
        "registryVersion": version,
        "lanes": lanes,
        "cooldowns": sorted(cooldowns, key=lambda item: item["lane"]),
    }


def usage_between(*, first_day: dt.date, last_day: dt.date, lane_id: str | None = None,
                  ) -> tuple[list[LaneUsage], dict[str, Any]]:
    """Rows of LaneUsage from `first_day` to `last_day` (inclusive), newest first, and their totals."""
    rows = LaneUsage.objects.filter(day__gte=first_day, day__lte=last_day)
    if lane_id:
        rows = rows.filter(lane_id=lane_id)
    totals = rows.aggregate(requests=Sum("requests"), failures=Sum("failures"), eur=Sum("eur"))
    return list(rows), {name: value or 0 for name, value in totals.items()}


def thinks_offline(*, lane_id: str, language: str) -> bool:
    """Whether a conversation on `lane_id` (empty: the router's choice for `language`)
    is answered by the mock lane's rule set (the offline dialogue policy): the named
    lane, else the first lane of the route the gateway can call, is in mode `mock`, or
    there is none. An assistant's instructions take effect only with a language model."""
    current = snapshot.current()
    if current is None:
        return True  # no registry: the gateway's own mock lane answers
    if lane_id:
        lane = current.by_id.get(lane_id)
        if lane is not None and chat_lane_mode(lane) is not None:
            return chat_lane_mode(lane) == "mock"
    for lane, _cooldown in ordered_lanes(route("chat", language=language)):
        mode = chat_lane_mode(lane)
        if mode is not None:
            return mode == "mock"
    return True


def callable_chat_lanes() -> list[tuple[str, str]]:
    """[(lane id, mode)] of the registry's chat lanes the gateway can call (api, cli or mock)."""
    current = snapshot.current()
    lanes = current.by_capability.get("chat", ()) if current is not None else ()
    return [(lane.id, mode) for lane in lanes if (mode := chat_lane_mode(lane)) is not None]


def chat_lane_connection(lane_id: str) -> dict[str, Any] | None:
    """The state of the chat lane `lane_id` (empty: the route's first) as the readiness
    check sees it — its mode, whether the gateway can call it now or why not, and the
    registry's last health probe — without calling it; None where no such lane is routed."""
    _version, states = chat_lane_states("chat")
    state = next((item for item in states if item["lane"] == lane_id), None) if lane_id else (
        next((item for item in states if item["usable"]), states[0] if states else None))
    if state is None:
        return None
    health = LaneHealth.objects.filter(lane_id=state["lane"]).first()
    return {**state, "healthOk": None if health is None else health.ok,
            "checkedAt": None if health is None else health.checked_at}
