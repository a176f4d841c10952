"""The gateway's writes: answering through the lanes, their cooldowns and usage."""
import time
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from gateway_app.cost import Measures, lane_cost
from gateway_app.errors import NoLaneAnswered
from gateway_app.failover import run_steps
from gateway_app.models import LaneUsage
from gateway_app.planning import ChatQuery, chat_steps
from registry_app.models import LaneCooldown
from registry_app.services import lane_cooldown_clear, lane_cooldown_start

_USAGE_FIELDS = ("requests", "failures", "input_tokens", "output_tokens", "characters", "audio_seconds", "eur")


@dataclass(frozen=True)
class GatewayAnswer:
    """What a lane answered, which lane, and every attempt on the way."""

    result: object
    lane: str
    mode: str
    attempts: list
    cost_eur: float
    fallback: bool = False

    def as_json(self):
        return {"lane": self.lane, "mode": self.mode, "attempts": [attempt.as_json() for attempt in self.attempts],
                "costEur": round(self.cost_eur, 6)}


def lane_usage_add(*, lane, mode, day=None, **counts):
    """Adds `counts` (requests, failures, tokens, characters, audio_seconds, eur) to the
    lane's row of the UTC day, creating it on first use; safe under concurrent requests."""
    unknown = set(counts) - set(_USAGE_FIELDS)
    if unknown:
        raise TypeError(f"unknown usage counts: {sorted(unknown)}")
    counts = {name: value for name, value in counts.items() if value}
    day = day or timezone.now().date()
    rows = LaneUsage.objects.filter(day=day, lane_id=lane.id, mode=mode)
    increments = {name: F(name) + value for name, value in counts.items()}
    with transaction.atomic():
        if rows.update(**increments):
            return
        try:
            with transaction.atomic():
                LaneUsage.objects.create(day=day, lane_id=lane.id, capability=lane.capability, mode=mode, **counts)
        except IntegrityError:  # another request created the row first
            rows.update(**increments)


def _record_failure(step, failure):
    if failure.cools_down:
        seconds = max(settings.GATEWAY_COOLDOWN_SEC, failure.retry_after or 0)
        lane_cooldown_start(lane_id=step.lane.id, seconds=seconds, reason=f"{failure.outcome}: {failure.detail}")
    lane_usage_add(lane=step.lane, mode=step.mode, failures=1)


def _record_success(step, cost, **counts):
    with transaction.atomic():
        lane_usage_add(lane=step.lane, mode=step.mode, requests=1, eur=Decimal(f"{cost:.6f}"), **counts)
        # The lane answered: its failures in a row start from zero (an expired cooldown row goes).
        if LaneCooldown.objects.filter(lane_id=step.lane.id).exists():
            lane_cooldown_clear(lane_id=step.lane.id)


def answer_through(steps, *, max_eur, what):
    """The first answer of `steps` (failover.run_steps), or NoLaneAnswered with every attempt."""
    deadline = time.monotonic() + settings.GATEWAY_DEADLINE_SEC
    answer = run_steps(steps, deadline=deadline, attempt_timeout=settings.GATEWAY_TIMEOUT_SEC, max_eur=max_eur,
                       on_failure=_record_failure)
    if answer.step is None:
        attempts = [attempt.as_json() for attempt in answer.attempts]
        message = (f"No lane could answer the {what} request." if attempts
                   else f"No lane of the registry can answer a {what} request (see GET /v2/registry/route).")
        raise NoLaneAnswered(message, details={"attempts": attempts})
    return answer


def gateway_chat(*, query, max_eur=None, min_quality=None, max_latency=None, hosted_fallback=False):
    """A GatewayAnswer whose result is a ChatResult."""
    max_eur = settings.GATEWAY_MAX_EUR if max_eur is None else max_eur
    steps = chat_steps(query, max_eur=max_eur, min_quality=min_quality, max_latency=max_latency,
                       hosted_fallback=hosted_fallback)
    answer = answer_through(steps, max_eur=max_eur, what=query.capability)
    step, result = answer.step, answer.result
    # Simulated lanes spend nothing, whatever their price.
    cost = 0.0 if step.mode == "mock" else lane_cost(step.lane, Measures(tokens=result.input_tokens
                                                                          + result.output_tokens))
    _record_success(step, cost, input_tokens=result.input_tokens, output_tokens=result.output_tokens)
    return GatewayAnswer(result=result, lane=step.lane.id, mode=step.mode, attempts=answer.attempts, cost_eur=cost,
                         fallback=step.fallback)


def gateway_agent_answer(*, prompt, capability="chat", language=None, max_eur=None, system=""):
    """POST /v1/agent."""
    query = ChatQuery(prompt=prompt, system=system or "", language=language, capability=capability)
    return gateway_chat(query=query, max_eur=max_eur)
