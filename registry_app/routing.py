"""Routing: which lanes of a capability to use, in which order, and why.

The rest of the project picks its lane here, e.g. the audio engines:

    from registry_app.routing import pick_lane
    lane = pick_lane("tts", language="de")   # a SnapshotLane, or None
    if lane is not None: ... lane.id, lane.entry["endpoint"] ...

The order is CONTRACT §7's sort key: (status: live 0, key-ready 1; price: `eur` 0 →
0, `eur` > 0 → 1, `eur` null → 2; priority ascending; quality tier frontier 0, high 1,
mid 2; latency fast 0, medium 1, slow 2; id). Every lane of the capability that is
left out is listed with the reason why: also a lane that is degraded (its health
probes failed several times in a row) or in a cooldown (the gateway's last call to it
failed; `registry_app.services.lane_cooldown_start`).
"""
import datetime
import json
import threading
import time
from dataclasses import dataclass
from functools import cached_property

from django.utils import timezone

from registry_app import snapshot as registry_snapshot
from registry_app.models import LaneCooldown, LaneHealth
from registry_app.snapshot import LATENCY_RANK, QUALITY_RANK

USABLE_STATUSES = {"live": 0, "key-ready": 1}
# Failed health probes in a row, the latest newer than the window, mark the lane
# degraded (probe_registry records the results; run it more often than this window,
# e.g. every 5 minutes). One failure alone (a restart, a slow moment) does not.
DEGRADED_WINDOW = datetime.timedelta(minutes=15)
DEGRADED_AFTER_FAILURES = 2
# Probe failures and cooldowns are read at most once per this many seconds per
# process: the gateway routes on every request, and two queries each time were most
# of its overhead. A write in this process (a cooldown after a failed call) is seen
# at once; one in another process (the other gunicorn worker) within this time.
LANE_STATE_SECONDS = 1.0
ZERO_EURO_SOURCE = {"self-hosted": "self-hosted", "subscription": "subscription"}
PRICE_GROUP_NAMES = ("zero-euro", "paid per use", "unknown price")
# route(current=…) not given: the route reads the current snapshot itself.
UNREAD = object()


@dataclass(frozen=True)
class Candidate:
    lane: registry_snapshot.SnapshotLane
    rank: int
    reasons: tuple

    def as_json(self):
        return {"lane": self.lane.id, "rank": self.rank, "reasons": list(self.reasons), "model": self.lane.entry}


@dataclass(frozen=True)
class Exclusion:
    lane: registry_snapshot.SnapshotLane
    code: str
    reason: str

    def as_json(self):
        return {"lane": self.lane.id, "code": self.code, "reason": self.reason}


@dataclass(frozen=True)
class Route:
    capability: str
    version: int | None  # the registry version number routed on, or None without a registry
    candidates: tuple
    excluded: tuple

    def as_json(self):
        return {
            "capability": self.capability,
            "registryVersion": self.version,
            "candidates": [candidate.as_json() for candidate in self.candidates],
            "excluded": [exclusion.as_json() for exclusion in self.excluded],
        }

    @cached_property
    def rendered(self):
        """The JSON body as bytes, made once per cached route (a large registry's route
        is hundreds of kilobytes; rendering it dominated the request)."""
        return render_json(self.as_json())


def render_json(body):
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def price_group(eur):
    """0 free, 1 paid, 2 unknown: `eur` null is never free and ranks after known prices."""
    if eur is None:
        return 2
    return 0 if eur == 0 else 1


def sort_key(lane):
    return (USABLE_STATUSES[lane.status], price_group(lane.eur), lane.priority, QUALITY_RANK[lane.quality_tier],
            LATENCY_RANK[lane.latency_class], lane.id)


def _price_reason(lane):
    group = price_group(lane.eur)
    if group == 0:
        source = ZERO_EURO_SOURCE.get(lane.cost_model, "existing credit")
        return f"zero-euro cost ({source})"
    if group == 1:
        return f"paid per use: {lane.eur} EUR per {lane.cost_unit}"
    return "price unknown: ranked after lanes with known prices, never as free"


def _after_reason(lane, previous):
    """Why `lane` comes after `previous`: the first part of the sort key that differs."""
    mine, theirs = sort_key(lane), sort_key(previous)
    if mine[0] != theirs[0]:
        why = f"status {lane.status} ranks after {previous.status}"
    elif mine[1] != theirs[1]:
        why = f"{PRICE_GROUP_NAMES[mine[1]]} ranks after {PRICE_GROUP_NAMES[theirs[1]]}"
    elif mine[2] != theirs[2]:
        why = f"priority {lane.priority} after {previous.priority}"
    elif mine[3] != theirs[3]:
        why = f"quality tier {lane.quality_tier} after {previous.quality_tier}"
    elif mine[4] != theirs[4]:
        why = f"latency {lane.latency_class} after {previous.latency_class}"
    else:
        why = "equal otherwise; ordered by id"
    return f"after {previous.id}: {why}"


def _reasons(lane, previous):
    status = "live: usable now" if lane.status == "live" else "key-ready: callable with its key"
    reasons = [status, _price_reason(lane), f"priority {lane.priority}", f"quality tier {lane.quality_tier}",
               f"latency {lane.latency_class}"]
    reasons.append(_after_reason(lane, previous) if previous is not None else "ranked first")
    return tuple(reasons)


def recent_probe_failures(now=None):
    """{lane id: LaneHealth} of the lanes whose health probes failed in a row recently."""
    since = (now or timezone.now()) - DEGRADED_WINDOW
    return {health.lane_id: health for health in LaneHealth.objects.filter(
        ok=False, checked_at__gte=since, consecutive_failures__gte=DEGRADED_AFTER_FAILURES)}


@dataclass(frozen=True)
class LaneState:
    """What the database says about the lanes' health now."""

    failures: dict  # lane id: LaneHealth, degraded lanes only
    cooldowns: dict  # lane id: LaneCooldown, every row (a cooldown that has ended too)

    def active_cooldowns(self, now):
        return {lane_id: cooldown for lane_id, cooldown in self.cooldowns.items() if cooldown.until > now}


_state_lock = threading.Lock()
_state = None  # (time.monotonic() until which it is fresh, LaneState)


def invalidate_lane_state():
    """Read the lanes' state again on next use (after a probe result is recorded)."""
    global _state
    with _state_lock:
        _state = None


def note_cooldown(lane_id, cooldown):
    """This process's own cooldown write (`cooldown` None: cleared), applied to the state
    in memory: the next route sees it without reading everything again."""
    global _state
    with _state_lock:
        if _state is None:
            return
        expires, state = _state
        cooldowns = {**state.cooldowns, lane_id: cooldown}
        if cooldown is None:
            del cooldowns[lane_id]
        _state = (expires, LaneState(state.failures, cooldowns))


def lane_state(now=None):
    """The LaneState, from memory when read less than LANE_STATE_SECONDS ago (a given
    `now` always reads the database)."""
    global _state
    if now is not None:
        return LaneState(recent_probe_failures(now), {c.lane_id: c for c in LaneCooldown.objects.all()})
    cached = _state
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    fresh = lane_state(timezone.now())
    with _state_lock:
        _state = (time.monotonic() + LANE_STATE_SECONDS, fresh)
    return fresh


def active_cooldowns(now=None):
    """{lane id: LaneCooldown} of the lanes in a cooldown now."""
    return lane_state(now).active_cooldowns(now or timezone.now())


def cooldown_reason(cooldown):
    calls = "call" if cooldown.failures == 1 else "calls"
    detail = f": {cooldown.reason}" if cooldown.reason else ""
    return f"cooldown until {cooldown.until.isoformat()} after {cooldown.failures} failed {calls} in a row{detail}"


def _exclusion(lane, *, language, streaming, min_quality, max_latency, allow_paid, failures, cooldowns):
    """(code, reason) why `lane` is left out, or None if it is a candidate."""
    if lane.status not in USABLE_STATUSES:
        return "status_unusable", f"status {lane.status} is not usable (only live and key-ready lanes are routed)"
    failure = failures.get(lane.id)
    if failure is not None:
        detail = f": {failure.detail}" if failure.detail else ""
        return "degraded", (f"degraded: {failure.consecutive_failures} health probes failed in a row, the last at "
                            f"{failure.checked_at.isoformat()}{detail}")
    if language and not lane.speaks(language):
        return "language", f"does not support language {language} (supports {', '.join(sorted(lane.languages))})"
    if streaming and not lane.streaming:
        return "streaming", "does not stream"
    if min_quality and QUALITY_RANK[lane.quality_tier] > QUALITY_RANK[min_quality]:
        return "quality", f"quality tier {lane.quality_tier} is below {min_quality}"
    if max_latency and LATENCY_RANK[lane.latency_class] > LATENCY_RANK[max_latency]:
        return "latency", f"latency {lane.latency_class} is slower than {max_latency}"
    if not allow_paid and price_group(lane.eur) != 0:
        if lane.eur is None:
            return "paid", "price unknown (eur null), so not known to be free; excluded by allow_paid=0"
        return "paid", f"paid per use ({lane.eur} EUR per {lane.cost_unit}); excluded by allow_paid=0"
    # Last: a cooldown excludes a lane that would otherwise be a candidate of this query.
    cooldown = cooldowns.get(lane.id)
    if cooldown is not None:
        return "cooldown", cooldown_reason(cooldown)
    return None


def _ranked_and_unusable(current, capability):
    """The lanes of a usable status in routing order, and the others, of one version."""
    def make():
        lanes = current.by_capability.get(capability, ())
        ranked = tuple(sorted((lane for lane in lanes if lane.status in USABLE_STATUSES), key=sort_key))
        unusable = tuple(lane for lane in lanes if lane.status not in USABLE_STATUSES)
        return ranked, unusable
    return current.derived.get_or_make(("ranked", capability), make)


def _state_key(failures, cooldowns):
    return (tuple(sorted((lane_id, health.checked_at, health.consecutive_failures, health.detail)
                         for lane_id, health in failures.items())),
            tuple(sorted((lane_id, cooldown.until, cooldown.failures, cooldown.reason)
                         for lane_id, cooldown in cooldowns.items())))


def route(capability, *, language=None, streaming=False, min_quality=None, max_latency=None, allow_paid=True,
          now=None, current=UNREAD):
    """The Route of `capability` on the current registry version (empty without one).

    `excluded` lists the lanes of an unusable status first (document order), then
    the usable ones that fail a condition (routing order). A route is computed once
    per version, query and set of degraded lanes and cooldowns, then served from memory.
    `current`: the snapshot the caller read a moment ago (registry_app.snapshot.current(),
    None without a registry), which spares the query for it.
    """
    if current is UNREAD:
        current = registry_snapshot.current()
    if current is None:
        return Route(capability=capability, version=None, candidates=(), excluded=())
    if capability in current.by_capability:
        state = lane_state(now)
        failures, cooldowns = state.failures, state.active_cooldowns(now or timezone.now())
    else:
        failures, cooldowns = {}, {}
    options = {"language": language, "streaming": streaming, "min_quality": min_quality,
               "max_latency": max_latency, "allow_paid": allow_paid}
    key = ("route", capability, tuple(options.values()), _state_key(failures, cooldowns))
    return current.derived.get_or_make(key, lambda: _route(current, capability, options, failures, cooldowns))


def _route(current, capability, options, failures, cooldowns):
    ranked, unusable = _ranked_and_unusable(current, capability)
    state = {"failures": failures, "cooldowns": cooldowns}
    excluded = [Exclusion(lane, *_exclusion(lane, **state, **options)) for lane in unusable]
    usable = []
    for lane in ranked:
        why = _exclusion(lane, **state, **options)
        if why is None:
            usable.append(lane)
        else:
            excluded.append(Exclusion(lane, *why))
    candidates = tuple(
        Candidate(lane, rank, _reasons(lane, usable[rank - 2] if rank > 1 else None))
        for rank, lane in enumerate(usable, start=1)
    )
    return Route(capability=capability, version=current.number, candidates=candidates, excluded=tuple(excluded))


def pick_lane(capability, **options):
    """The first lane of the route, or None when no lane is usable (or no registry)."""
    candidates = route(capability, **options).candidates
    return candidates[0].lane if candidates else None
