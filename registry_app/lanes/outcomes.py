"""What a lane's call leaves behind: its cooldown, and its usage.

A failure that says the lane is unwell right now (connection error, timeout, 5xx,
429) puts it in a cooldown of GATEWAY_COOLDOWN_SEC (a longer Retry-After of a 429
wins); the first answer after that clears it. Cooldowns are the registry's
(`LaneCooldown`), so the router can explain them, whoever called the lane: the
gateway (/v1/…) or speech_app (render, transcription, the agent).

Usage (the gateway's `LaneUsage`, per day, lane and mode) is kept by the gateway,
which sits above the callers below it: it registers its writer here in its
`AppConfig.ready()` (`register_usage_recorder`), so that a remote speech lane's use
is counted whichever caller made it, and nothing here imports the gateway.
"""
from decimal import Decimal

from django.conf import settings

from registry_app.routing import lane_state
from registry_app.services import lane_cooldown_clear, lane_cooldown_start, lane_error_record

_usage_recorders = []


def register_usage_recorder(recorder):
    """`recorder(lane=, mode=, **counts)` is told every counted use: `requests`,
    `failures`, `eur` (Decimal), `characters`, `audio_seconds`, tokens. Registering
    the same function again changes nothing."""
    if recorder not in _usage_recorders:
        _usage_recorders.append(recorder)


def _count(step, **counts):
    for recorder in _usage_recorders:
        recorder(lane=step.lane, mode=step.mode, **counts)


def record_failure(step, failure, *, key_cools_down=False):
    """A failed call of `step` (a LaneFailure): its last error (the lane's status shows
    it), its cooldown when the failure says the lane is unwell — or, with
    `key_cools_down` (a speech lane the operator named), when the provider refused its
    key: that will not mend by itself, and the local floor speaks meanwhile without
    asking it again — and one failure in its usage."""
    lane_error_record(lane_id=step.lane.id, outcome=failure.outcome, detail=failure.detail)
    if failure.cools_down or (key_cools_down and failure.key_refused):
        seconds = max(settings.GATEWAY_COOLDOWN_SEC, failure.retry_after or 0)
        lane_cooldown_start(lane_id=step.lane.id, seconds=seconds, reason=f"{failure.outcome}: {failure.detail}")
    _count(step, failures=1)


def record_success(step, cost, **counts):
    """An answer of `step`: one request and its counts in its usage; its failures in a
    row start from zero (a cooldown that has ended goes)."""
    _count(step, requests=1, eur=Decimal(f"{cost:.6f}"), **counts)
    if step.lane.id in lane_state().cooldowns:
        lane_cooldown_clear(lane_id=step.lane.id)
