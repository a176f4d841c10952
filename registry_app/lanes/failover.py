"""Trying lanes in order until one answers, with every attempt reported.

A `Step` is one lane of a plan (the gateway's chat plans in gateway_app/planning.py,
the speech plans in speech_app/lanes.py): either a call to make or a reason why the
lane is skipped (in a cooldown, no key, over budget, …). `run_steps` calls them in
order within one deadline; a `LaneFailure` moves on to the next step, and the
failures that say the lane is unwell right now (connection error, timeout, 5xx, 429)
put it in a cooldown (`registry_app.lanes.outcomes`), so the next requests skip it.
Any other exception (a client mistake such as undecodable audio) ends the request as
it is.
"""
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from registry_app.routing import price_group
from registry_app.snapshot import SnapshotLane

logger = logging.getLogger("gateway_app.paid")

# The outcomes after which a lane is put in a cooldown.
COOLDOWN_OUTCOMES = frozenset({"connection_error", "timeout", "server_error", "rate_limited"})
# A step gets no call with less time than this left.
MIN_ATTEMPT_SECONDS = 0.05


class LaneFailure(Exception):
    """A lane did not answer. `outcome` is one of the attempt outcomes (docs/api.md)."""

    def __init__(self, outcome, detail, *, retry_after=None, error=None, status=None):
        super().__init__(f"{outcome}: {detail}")
        self.outcome, self.detail, self.retry_after = outcome, detail, retry_after
        self.status = status  # the HTTP status of a refusal (`rejected`: 401 is a wrong key)
        # The error of this process's engine behind an `unavailable` (stt_unavailable,
        # stt_busy, …): what a caller answers with when no lane did.
        self.error = error

    @property
    def cools_down(self):
        return self.outcome in COOLDOWN_OUTCOMES

    @property
    def key_refused(self):
        """The provider refused the key (HTTP 401 or 403)."""
        return self.outcome == "rejected" and self.status in (401, 403)


@dataclass(frozen=True)
class Attempt:
    lane: str
    outcome: str
    ms: int
    mode: str = ""
    detail: str = ""

    def as_json(self):
        data = {"lane": self.lane, "outcome": self.outcome, "ms": self.ms, "mode": self.mode}
        if self.detail:
            data["detail"] = self.detail
        return data


@dataclass(frozen=True)
class Step:
    lane: SnapshotLane
    mode: str  # mock, api, cli or local
    call: object = None  # call(timeout seconds) -> result; None when skipped
    skip: tuple = ()  # (outcome, detail) of a lane that is not called
    estimate_eur: float = 0.0
    fallback: bool = False  # the cloud agent's fallback to a hosted chat provider
    # A call that keeps its own time (this process's engines: recognition has its
    # deadline, synthesis its caps): it gets all the time that is left, and is made
    # even when none is, so that the local fallback always answers or says why not.
    own_time: bool = False

    @property
    def paid(self):
        return price_group(self.lane.eur) != 0


@dataclass
class Answer:
    step: Step
    result: Any  # what the lane's call returned: a ChatResult, RenderedAudio or transcript
    attempts: list = field(default_factory=list)


def why_paid(attempts, step, max_eur):
    tried = "; ".join(f"{attempt.lane} {attempt.outcome}" for attempt in attempts) or "no zero-euro lane to try"
    simulated = " (mock mode: simulated, nothing spent)" if step.mode == "mock" else ""
    return (f"no zero-euro lane answered ({tried}); worst case {step.estimate_eur:.6f} EUR within max_eur "
            f"{max_eur:g}{simulated}")


def run_steps(steps, *, deadline, attempt_timeout, max_eur, on_failure):
    """The Answer of the first step that answers, or (None, attempts) when none did.

    `deadline` is a time.monotonic() value; each call gets at most `attempt_timeout`
    seconds and never more than what is left. `on_failure(step, failure)` records a
    failed call (cooldown, usage) and runs before the next step is tried.
    """
    attempts = []
    for step in steps:
        if step.skip:
            attempts.append(Attempt(step.lane.id, step.skip[0], 0, step.mode, step.skip[1]))
            continue
        left = deadline - time.monotonic()
        if left < MIN_ATTEMPT_SECONDS and not step.own_time:
            attempts.append(Attempt(step.lane.id, "deadline", 0, step.mode,
                                    "not tried: the request's time was used up by the lanes before"))
            continue
        if step.paid:
            logger.info("paid lane %s used: %s", step.lane.id, why_paid(attempts, step, max_eur))
        started = time.monotonic()
        try:
            result = step.call(max(left, 0.0) if step.own_time else min(attempt_timeout, left))
        except LaneFailure as failure:
            attempts.append(Attempt(step.lane.id, failure.outcome, ms_since(started), step.mode, failure.detail))
            on_failure(step, failure)
            continue
        attempts.append(Attempt(step.lane.id, "ok", ms_since(started), step.mode))
        return Answer(step, result, attempts)
    return Answer(None, None, attempts)


def ms_since(started):
    return round((time.monotonic() - started) * 1000)
