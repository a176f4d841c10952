"""The gateway's writes: answering through the lanes, their cooldowns and usage."""
import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from gateway_app.cost import Measures, lane_cost
from gateway_app.errors import AudioTooLong, NoLaneAnswered
from gateway_app.failover import Answer, LaneFailure, Step, run_steps
from gateway_app.models import LaneUsage
from gateway_app.planning import ChatQuery, chat_steps
from gateway_app.roles import role_named
from gateway_app.voice import hosted_speak, hosted_transcribe, voice_steps
from registry_app.routing import lane_state
from registry_app.services import lane_cooldown_clear, lane_cooldown_start
from registry_app.snapshot import SnapshotLane
from speech_app import services as speech
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

    def as_json(self) -> dict[str, Any]:
        return {"lane": self.lane, "mode": self.mode, "attempts": [attempt.as_json() for attempt in self.attempts],
                "costEur": round(self.cost_eur, 6)}


@lru_cache(maxsize=32)
def _increment_sql(names: tuple[str, ...]) -> str:
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


def _increment(day: dt.date, lane_id: str, mode: str, counts: dict[str, Any]) -> int:
    names = tuple(sorted(counts))
    with connection.cursor() as cursor:
        cursor.execute(_increment_sql(names), [*(counts[name] for name in names),
                                              connection.ops.adapt_datefield_value(day), lane_id, mode])
        return cursor.rowcount


def lane_usage_add(*, lane: SnapshotLane, mode: str, day: dt.date | None = None, **counts: Any) -> None:
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


def _record_failure(step: Step, failure: LaneFailure) -> None:
    if failure.cools_down:
        seconds = max(settings.GATEWAY_COOLDOWN_SEC, failure.retry_after or 0)
        lane_cooldown_start(lane_id=step.lane.id, seconds=seconds, reason=f"{failure.outcome}: {failure.detail}")
    lane_usage_add(lane=step.lane, mode=step.mode, failures=1)


def _record_success(step: Step, cost: float, **counts: Any) -> None:
    lane_usage_add(lane=step.lane, mode=step.mode, requests=1, eur=Decimal(f"{cost:.6f}"), **counts)
    # The lane answered: its failures in a row start from zero (a cooldown that has ended goes).
    if step.lane.id in lane_state().cooldowns:
        lane_cooldown_clear(lane_id=step.lane.id)


def answer_through(steps: list[Step], *, max_eur: float, what: str) -> Answer:
    """The first answer of `steps` (failover.run_steps), or NoLaneAnswered with every attempt."""
    deadline = time.monotonic() + settings.GATEWAY_DEADLINE_SEC
    answer = run_steps(steps, deadline=deadline, attempt_timeout=settings.GATEWAY_TIMEOUT_SEC, max_eur=max_eur,
                       on_failure=_record_failure)
    if answer.step is None:
        attempts = [attempt.as_json() for attempt in answer.attempts]
        if attempts:
            last = answer.attempts[-1]
            message = (f"No lane could answer the {what} request; the last, {last.lane}, {last.outcome}"
                       + (f": {last.detail}" if last.detail else "."))
        else:
            message = f"No lane of the registry can answer a {what} request (see GET /v2/registry/route)."
        raise NoLaneAnswered(message, details={"attempts": attempts})
    return answer


def gateway_chat(*, query: ChatQuery, max_eur: float | None = None, min_quality: str | None = None,
                 max_latency: str | None = None, hosted_fallback: bool = False) -> GatewayAnswer:
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


def gateway_agent_answer(*, prompt: str, capability: str = "chat", language: str | None = None,
                         max_eur: float | None = None, system: str = "") -> GatewayAnswer:
    """POST /v1/agent."""
    query = ChatQuery(prompt=prompt, system=system or "", language=language, capability=capability)
    return gateway_chat(query=query, max_eur=max_eur)


def gateway_role_answer(*, role: str, prompt: str, language: str | None = None) -> GatewayAnswer:
    """POST /agent: the role's lanes (gateway_app/roles.py), then the hosted fallback."""
    limits = role_named(role)
    return gateway_chat(query=ChatQuery(prompt=prompt, language=language), max_eur=limits.max_eur,
                        min_quality=limits.min_quality, max_latency=limits.max_latency, hosted_fallback=True)


def _voice_answer(capability: str, *, measures: Measures, max_eur: float | None, local_call: Callable[[], Any],
                  hosted_call: Callable[..., Any], language: str | None) -> tuple[Answer, float]:
    max_eur = settings.GATEWAY_MAX_EUR if max_eur is None else max_eur
    steps = voice_steps(capability, language=language, measures=measures, max_eur=max_eur, local_call=local_call,
                        hosted_call=hosted_call)
    answer = answer_through(steps, max_eur=max_eur, what=capability)
    cost = lane_cost(answer.step.lane, measures)
    return answer, cost


def gateway_speak(*, text: str, voice: str | None = None, language: str | None = None,
                  max_eur: float | None = None) -> GatewayAnswer:
    """POST /v1/speak: a GatewayAnswer whose result is a RenderedAudio (MP3)."""
    if voice is None and language is not None:
        voice = language  # eSpeak NG names its voices by language
    language = language or (voice or settings.SPEECH_DEFAULT_VOICE).partition("+")[0]
    measures = Measures(characters=len(text))
    answer, cost = _voice_answer("tts", measures=measures, max_eur=max_eur, language=language,
                                 local_call=lambda: speech.speech_render(text=text, voice=voice)[0],
                                 hosted_call=hosted_speak(text, voice or language))
    rendered = answer.result
    _record_success(answer.step, cost, characters=len(text), audio_seconds=rendered.duration_sec)
    return GatewayAnswer(result=rendered, lane=answer.step.lane.id, mode=answer.step.mode, attempts=answer.attempts,
                         cost_eur=cost)


@dataclass(frozen=True)
class HeardText:
    """What a hosted speech API heard, shaped like the speech module's Transcript."""

    text: str
    duration_sec: float
    engine: str
    model: str
    language: str

    def as_json(self) -> dict[str, Any]:
        return {"text": self.text, "words": [], "durationSec": round(self.duration_sec, 2), "engine": self.engine,
                "model": self.model, "language": self.language}


def gateway_transcribe(*, audio: bytes, language: str | None = None, max_eur: float | None = None,
                       phrases: list[str] | None = None) -> GatewayAnswer:
    """POST /v1/transcribe: a GatewayAnswer whose result has `as_json()` (the transcript).

    The audio is decoded once up front: undecodable or over-long audio is refused
    before any lane is asked, and its length prices the hosted lanes."""
    language = language or "de"
    if not audio:
        raise EmptyAudio()
    seconds = decode_to_pcm(audio).duration_sec
    if seconds > settings.GATEWAY_MAX_AUDIO_SEC:
        raise AudioTooLong(f"The audio is {seconds:.1f} s long; the voice gateway transcribes at most "
                           f"{settings.GATEWAY_MAX_AUDIO_SEC:g} s per request.",
                           details={"seconds": round(seconds, 2), "maxSeconds": settings.GATEWAY_MAX_AUDIO_SEC})
    measures = Measures(audio_seconds=seconds)

    def hosted(endpoint: str, key: str, model: str, timeout: float) -> HeardText:
        text = hosted_transcribe(audio, language)(endpoint, key, model, timeout)
        return HeardText(text=text, duration_sec=seconds, engine="api", model=model, language=language)

    answer, cost = _voice_answer("stt", measures=measures, max_eur=max_eur, language=language,
                                 local_call=lambda: speech.audio_transcribe(audio=audio, language=language, phrases=phrases),
                                 hosted_call=hosted)
    _record_success(answer.step, cost, audio_seconds=seconds)
    return GatewayAnswer(result=answer.result, lane=answer.step.lane.id, mode=answer.step.mode,
                         attempts=answer.attempts, cost_eur=cost)
