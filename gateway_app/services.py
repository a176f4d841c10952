"""The gateway's writes: answering through the lanes, their cooldowns and usage."""
import time
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from gateway_app.errors import AudioTooLong, NoLaneAnswered, OverBudget
from gateway_app.models import LaneUsage
from gateway_app.planning import ChatQuery, chat_steps
from gateway_app.roles import role_named
from gateway_app.voice import speak_steps, transcribe_steps_for
from registry_app.lanes.cost import Measures, lane_cost
from registry_app.lanes.failover import run_steps
from registry_app.lanes.outcomes import record_failure, record_success
from speech_app.decode import decode_to_pcm
from speech_app.errors import EmptyAudio

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


@lru_cache(maxsize=32)
def _increment_sql(names):
    """UPDATE … SET name = name + %s … for one lane's row of a day. Plain SQL: this runs
    on every answer, and building it with the ORM (F expressions) took longer than the
    gateway's whole routing."""
    quote = connection.ops.quote_name
    sets = ", ".join(
        # As the ORM writes it for decimals: exact on PostgreSQL, numeric on SQLite.
        f"{quote(name)} = CAST({quote(name)} + CAST(%s AS NUMERIC) AS NUMERIC)" if name == "eur"
        else f"{quote(name)} = {quote(name)} + %s" for name in names)
    return (f"UPDATE {quote(LaneUsage._meta.db_table)} SET {sets} "
            f"WHERE {quote('day')} = %s AND {quote('lane_id')} = %s AND {quote('mode')} = %s")


def _increment(day, lane_id, mode, counts):
    names = tuple(sorted(counts))
    with connection.cursor() as cursor:
        cursor.execute(_increment_sql(names), [*(counts[name] for name in names),
                                              connection.ops.adapt_datefield_value(day), lane_id, mode])
        return cursor.rowcount


def lane_usage_add(*, lane, mode, day=None, **counts):
    """Adds `counts` (requests, failures, tokens, characters, audio_seconds, eur) to the
    lane's row of the UTC day, creating it on first use; safe under concurrent requests."""
    unknown = set(counts) - set(_USAGE_FIELDS)
    if unknown:
        raise TypeError(f"unknown usage counts: {sorted(unknown)}")
    counts = {name: value for name, value in counts.items() if value}
    if not counts:
        return
    day = day or timezone.now().date()
    # One UPDATE is atomic on its own; only the day's first use of a lane creates the row.
    if _increment(day, lane.id, mode, counts):
        return
    try:
        with transaction.atomic():
            LaneUsage.objects.create(day=day, lane_id=lane.id, capability=lane.capability, mode=mode, **counts)
    except IntegrityError:  # another request created the row first
        _increment(day, lane.id, mode, counts)


# Why a lane is not used that stays so for this request, however often it is sent.
LASTING_OUTCOMES = frozenset({"over_budget", "price_unknown", "no_key", "unavailable"})


def _over_budget(steps, attempts, *, max_eur, what):
    """OverBudget when the budget is what stands between the request and an answer: a
    lane was refused for it and every other one is out of reach for lasting reasons
    (none failed or cooled down, so a retry would end the same way). Else None."""
    refused = [step for step in steps if step.skip and step.skip[0] == "over_budget"]
    if not refused or any(attempt.outcome not in LASTING_OUTCOMES for attempt in attempts):
        return None
    cheapest = min(refused, key=lambda step: step.estimate_eur)
    return OverBudget(
        f"No lane can answer this {what} request within its budget of {max_eur:g} EUR: the cheapest, "
        f"{cheapest.lane.id}, could cost up to {cheapest.estimate_eur:.6f} EUR. Raise max_eur or shorten the "
        "request.",
        details={"maxEur": max_eur, "worstCaseEur": round(cheapest.estimate_eur, 6), "lane": cheapest.lane.id,
                 "attempts": [attempt.as_json() for attempt in attempts]})


def answer_through(steps, *, max_eur, what):
    """The first answer of `steps` (failover.run_steps); OverBudget when only the budget
    stood in the way, else NoLaneAnswered, with every attempt."""
    deadline = time.monotonic() + settings.GATEWAY_DEADLINE_SEC
    answer = run_steps(steps, deadline=deadline, attempt_timeout=settings.GATEWAY_TIMEOUT_SEC, max_eur=max_eur,
                       on_failure=record_failure)
    if answer.step is None:
        refusal = _over_budget(steps, answer.attempts, max_eur=max_eur, what=what)
        if refusal is not None:
            raise refusal
        attempts = [attempt.as_json() for attempt in answer.attempts]
        if attempts:
            last = answer.attempts[-1]
            message = (f"No lane could answer the {what} request; the last, {last.lane}, {last.outcome}"
                       + (f": {last.detail}" if last.detail else "."))
        else:
            message = f"No lane of the registry can answer a {what} request (see GET /v2/registry/route)."
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
    record_success(step, cost, input_tokens=result.input_tokens, output_tokens=result.output_tokens)
    return GatewayAnswer(result=result, lane=step.lane.id, mode=step.mode, attempts=answer.attempts, cost_eur=cost,
                         fallback=step.fallback)


def gateway_agent_answer(*, prompt, capability="chat", language=None, max_eur=None, system=""):
    """POST /v1/agent."""
    query = ChatQuery(prompt=prompt, system=system or "", language=language, capability=capability)
    return gateway_chat(query=query, max_eur=max_eur)


def gateway_role_answer(*, role, prompt, language=None):
    """POST /agent: the role's lanes (gateway_app/roles.py), then the hosted fallback."""
    limits = role_named(role)
    return gateway_chat(query=ChatQuery(prompt=prompt, language=language), max_eur=limits.max_eur,
                        min_quality=limits.min_quality, max_latency=limits.max_latency, hosted_fallback=True)


def gateway_speak(*, text, voice=None, language=None, max_eur=None):
    """POST /v1/speak: a GatewayAnswer whose result is a RenderedAudio (MP3)."""
    max_eur = settings.GATEWAY_MAX_EUR if max_eur is None else max_eur
    answer = answer_through(speak_steps(text=text, voice=voice, language=language, max_eur=max_eur),
                            max_eur=max_eur, what="tts")
    rendered, _ = answer.result
    cost = lane_cost(answer.step.lane, Measures(characters=len(text)))
    record_success(answer.step, cost, characters=len(text), audio_seconds=rendered.duration_sec)
    return GatewayAnswer(result=rendered, lane=answer.step.lane.id, mode=answer.step.mode, attempts=answer.attempts,
                         cost_eur=cost)


def gateway_transcribe(*, audio, language=None, max_eur=None, phrases=None):
    """POST /v1/transcribe: a GatewayAnswer whose result is the Transcript.

    The audio is decoded once up front: undecodable or over-long audio is refused
    before any lane is asked, and its length prices the paid lanes."""
    language = language or "de"
    max_eur = settings.GATEWAY_MAX_EUR if max_eur is None else max_eur
    if not audio:
        raise EmptyAudio()
    decoded = decode_to_pcm(audio)
    seconds = decoded.duration_sec
    if seconds > settings.GATEWAY_MAX_AUDIO_SEC:
        raise AudioTooLong(f"The audio is {seconds:.1f} s long; the voice gateway transcribes at most "
                           f"{settings.GATEWAY_MAX_AUDIO_SEC:g} s per request.",
                           details={"seconds": round(seconds, 2), "maxSeconds": settings.GATEWAY_MAX_AUDIO_SEC})
    steps = transcribe_steps_for(decoded.pcm, language=language, phrases=phrases or None, seconds=seconds,
                                 max_eur=max_eur)
    answer = answer_through(steps, max_eur=max_eur, what="stt")
    cost = lane_cost(answer.step.lane, Measures(audio_seconds=seconds))
    record_success(answer.step, cost, audio_seconds=seconds)
    return GatewayAnswer(result=answer.result, lane=answer.step.lane.id, mode=answer.step.mode,
                         attempts=answer.attempts, cost_eur=cost)
