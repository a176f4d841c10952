"""The gateway's writes: answering through the lanes, their cooldowns and usage."""
import datetime as dt
import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any, cast

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from console.errors import ValidationFailed
from gateway_app.errors import AnswerInterrupted, AudioTooLong, NoLaneAnswered, OverBudget
from gateway_app.models import LaneUsage
from gateway_app.planning import TURN_CAPABILITIES, ChatQuery, chat_steps, turn_lanes, turn_steps
from gateway_app.roles import role_named
from gateway_app.turns import (
    ChatDone,
    ChatRequest,
    LaneEnd,
    TextDelta,
    ToolCall,
    chat_request,
    request_token_bound,
    token_bound,
)
from gateway_app.voice import speak_steps, transcribe_steps_for
from registry_app.lanes.cost import Measures, lane_cost
from registry_app.lanes.failover import (
    MIN_ATTEMPT_SECONDS,
    Answer,
    Attempt,
    LaneFailure,
    Step,
    ms_since,
    run_steps,
    why_paid,
)
from registry_app.lanes.failover import logger as paid_logger
from registry_app.lanes.http import Cancel
from registry_app.lanes.outcomes import record_failure, record_success
from registry_app.snapshot import SnapshotLane
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


# Why a lane is not used that stays so for this request, however often it is sent.
LASTING_OUTCOMES = frozenset({"over_budget", "price_unknown", "no_key", "unavailable"})


def _over_budget(steps: Sequence[Step], attempts: Sequence[Attempt], *, max_eur: float,
                 what: str) -> OverBudget | None:
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


def answer_through(steps: Sequence[Step], *, max_eur: float, what: str) -> Answer:
    """The first answer of `steps` (failover.run_steps); OverBudget when only the budget
    stood in the way, else NoLaneAnswered, with every attempt."""
    deadline = time.monotonic() + settings.GATEWAY_DEADLINE_SEC
    answer = run_steps(steps, deadline=deadline, attempt_timeout=settings.GATEWAY_TIMEOUT_SEC, max_eur=max_eur,
                       on_failure=record_failure)
    if answer.step is None:
        raise _no_answer(steps, answer.attempts, max_eur=max_eur, what=what)
    return answer


def _no_answer(steps: Sequence[Step], attempts: Sequence[Attempt], *, max_eur: float,
               what: str) -> OverBudget | NoLaneAnswered:
    """The error of a request no lane answered: OverBudget when only the budget stood
    in the way, else NoLaneAnswered, with every attempt."""
    refusal = _over_budget(steps, attempts, max_eur=max_eur, what=what)
    if refusal is not None:
        return refusal
    if attempts:
        last = attempts[-1]
        message = (f"No lane could answer the {what} request; the last, {last.lane}, {last.outcome}"
                   + (f": {last.detail}" if last.detail else "."))
    else:
        message = f"No lane of the registry can answer a {what} request (see GET /v2/registry/route)."
    return NoLaneAnswered(message, details={"attempts": [attempt.as_json() for attempt in attempts]})


def gateway_prompt_answer(*, query: ChatQuery, max_eur: float | None = None, min_quality: str | None = None,
                          max_latency: str | None = None, hosted_fallback: bool = False) -> GatewayAnswer:
    """One prompt's answer (/v1/agent, /agent): a GatewayAnswer whose result is a ChatResult."""
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


def gateway_agent_answer(*, prompt: str, capability: str = "chat", language: str | None = None,
                         max_eur: float | None = None, system: str = "") -> GatewayAnswer:
    """POST /v1/agent."""
    query = ChatQuery(prompt=prompt, system=system or "", language=language, capability=capability)
    return gateway_prompt_answer(query=query, max_eur=max_eur)


def gateway_role_answer(*, role: str, prompt: str, language: str | None = None) -> GatewayAnswer:
    """POST /agent: the role's lanes (gateway_app/roles.py), then the hosted fallback."""
    limits = role_named(role)
    return gateway_prompt_answer(query=ChatQuery(prompt=prompt, language=language), max_eur=limits.max_eur,
                                 min_quality=limits.min_quality, max_latency=limits.max_latency,
                                 hosted_fallback=True)


# --- A conversation's turn: messages and tools in, a stream of events out ---

class ChatStream:
    """The events of one turn, read as the lane answers: `TextDelta`s, then the
    `ToolCall`s (complete), then one `ChatDone` (gateway_app/turns.py).

    `gateway_chat` returns it once a lane has started to answer (its first event is
    read), so `lane`, `mode` and `attempts` (every lane tried, up to this one) are
    known from the start. Iterating may raise `AnswerInterrupted` (502) when the lane
    fails after its first event was handed on: the turn ends there, what came before
    stands. `close()` (or leaving a `with` block) stops reading, e.g. when the caller
    interrupts the agent: the lane's connection is closed and what was read is
    counted in its usage. It may be called from another thread while one is waiting
    for the next event: that wait ends at once, without another event."""

    def __init__(self, steps: Sequence[Step], request: ChatRequest, *, max_eur: float, what: str,
                 first_token_sec: float, ends_by: float, whole: bool) -> None:
        self.lane, self.mode, self.attempts = "", "", ()
        self._step, self._output_bytes, self._closed, self._held = None, 0, False, None
        self._request, self._counted, self._count_lock = request, False, threading.Lock()
        self._cancel = Cancel()
        self._events = self._run(steps, max_eur=max_eur, what=what, first_token_sec=first_token_sec,
                                 ends_by=ends_by, whole=whole)
        # The first event now: a turn no lane answers raises here, before anything is handed on.
        self._held = next(self._events)

    lane: str  # the lane that answers
    mode: str  # mock, api or cli
    attempts: tuple  # failover.Attempt, every lane tried up to this one
    _step: Step | None  # the lane's step, once it has handed on its first event
    _held: TextDelta | ToolCall | ChatDone | None  # an event read but not yet handed on

    def __iter__(self) -> "ChatStream":
        return self

    def __next__(self) -> TextDelta | ToolCall | ChatDone:
        if self._held is not None:
            event, self._held = self._held, None
            return event
        if self._closed:
            raise StopIteration
        event = next(self._events)
        if self._closed:  # closed by another thread while this one read: what it read is dropped
            self._events.close()
            raise StopIteration
        return event

    def close(self) -> None:
        """Stops reading; the lane's connection is closed, what was read counted."""
        if self._closed:
            return
        self._closed, self._held = True, None
        self._cancel.cancel()  # a read blocked in another thread returns now
        try:
            self._events.close()
        except ValueError:  # being read in another thread, which ends the turn itself (_lane)
            return
        if self._step is not None:
            self._count(None, None)

    def __enter__(self) -> "ChatStream":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _commit(self, step: Step, attempts: Sequence[Attempt]) -> None:
        self._step, self.lane, self.mode, self.attempts = step, step.lane.id, step.mode, tuple(attempts)

    def _count(self, input_tokens: int | None, output_tokens: int | None, *,
               failure: LaneFailure | None = None) -> tuple[int, int, float] | None:
        """Books the turn in the lane's usage (the lane's counts, else the bounds), once,
        and returns (input tokens, output tokens, euros)."""
        with self._count_lock:
            if self._counted:
                return None
            self._counted = True
        step = self._step
        assert step is not None  # counted only once a lane has answered (_commit)
        input_tokens = input_tokens if input_tokens is not None else request_token_bound(self._request)
        output_tokens = (output_tokens if output_tokens is not None
                         else min(self._output_bytes, self._request.max_tokens))
        cost = 0.0 if step.mode == "mock" else lane_cost(step.lane, Measures(tokens=input_tokens + output_tokens))
        if failure is None:
            record_success(step, cost, input_tokens=input_tokens, output_tokens=output_tokens)
        else:
            record_failure(step, failure)
            lane_usage_add(lane=step.lane, mode=step.mode, input_tokens=input_tokens, output_tokens=output_tokens,
                           eur=Decimal(f"{cost:.6f}"))
        return input_tokens, output_tokens, cost

    def _run(self, steps: Sequence[Step], *, max_eur: float, what: str, first_token_sec: float, ends_by: float,
             whole: bool) -> Generator[TextDelta | ToolCall | ChatDone, None, None]:
        attempts = []
        for step in steps:
            if step.skip:
                attempts.append(Attempt(step.lane.id, step.skip[0], 0, step.mode, step.skip[1]))
                continue
            now = time.monotonic()
            if ends_by - now < MIN_ATTEMPT_SECONDS:
                attempts.append(Attempt(step.lane.id, "deadline", 0, step.mode,
                                        "not tried: the turn's time was used up by the lanes before"))
                continue
            if step.paid:
                paid_logger.info("paid lane %s used: %s", step.lane.id, why_paid(attempts, step, max_eur))
            answered = yield from self._lane(step, attempts, started=now, first_by=min(now + first_token_sec, ends_by),
                                             ends_by=ends_by, whole=whole)
            if answered:
                return
        raise _no_answer(steps, attempts, max_eur=max_eur, what=what)

    def _lane(self, step: Step, attempts: list[Attempt], *, started: float, first_by: float, ends_by: float,
              whole: bool) -> Generator[TextDelta | ToolCall | ChatDone, None, bool]:
        """Yields one lane's events; True when it answered, False when it failed before
        handing anything on (the next lane is tried)."""
        held, text, calls, end, emitted = [], [], [], None, False
        self._output_bytes = 0
        # A turn's step: call(first_by, ends_by, cancel) reads the lane's events (gateway_app.planning).
        call = cast(Callable[[float, float, Cancel], Generator[TextDelta | ToolCall | LaneEnd, None, None]], step.call)
        events = call(first_by, ends_by, self._cancel)
        try:
            for event in events:
                if isinstance(event, LaneEnd):
                    end = event
                    break
                if isinstance(event, TextDelta):
                    text.append(event.text)
                    self._output_bytes += token_bound(event.text)
                else:
                    calls.append(event)
                # Held back: the whole answer (stream=False), or blanks before the first word.
                if whole or (not emitted and isinstance(event, TextDelta) and not event.text.strip()):
                    held.append(event)
                    continue
                if not emitted:
                    attempts.append(Attempt(step.lane.id, "ok", ms_since(started), step.mode))
                    self._commit(step, attempts)
                    emitted = True
                    yield from held
                    held = []
                yield event
            if end is None:
                raise LaneFailure("bad_response", "the answer ended without its end")
            if not emitted and not "".join(text).strip() and not calls:
                raise LaneFailure("bad_response", "the answer has no text and no tool call")
        except LaneFailure as failure:
            if self._cancel.cancelled:  # closed from another thread: the turn ends quietly
                if emitted:
                    self._count(None, None)
                return True
            if not emitted:
                attempts.append(Attempt(step.lane.id, failure.outcome, ms_since(started), step.mode, failure.detail))
                record_failure(step, failure)
                return False
            self._count(None, None, failure=failure)
            raise AnswerInterrupted(
                f"The lane {step.lane.id} stopped answering mid-answer ({failure.outcome}: {failure.detail}); the "
                "turn ends here.",
                details={"lane": step.lane.id, "outcome": failure.outcome, "detail": failure.detail,
                         "attempts": [attempt.as_json() for attempt in attempts]}) from None
        finally:
            events.close()
        if not emitted:
            attempts.append(Attempt(step.lane.id, "ok", ms_since(started), step.mode))
            self._commit(step, attempts)
        yield from held
        counted = self._count(end.input_tokens, end.output_tokens)
        if counted is None:  # closed from another thread meanwhile, and booked there
            return True
        input_tokens, output_tokens, cost = counted
        yield ChatDone(finish_reason=end.finish_reason, text="".join(text), tool_calls=tuple(calls),
                       input_tokens=input_tokens, output_tokens=output_tokens, lane=step.lane.id, mode=step.mode,
                       cost_eur=cost, attempts=tuple(attempts))
        return True


def turn_lane(lane_id: str, capability: str) -> SnapshotLane:
    """The registry's lane called `lane_id` that a turn of `capability` may name, or a
    400 on `lane` listing them."""
    lanes = turn_lanes(capability)
    for lane in lanes:
        if lane.id == lane_id:
            return lane
    names = ", ".join(lane.id for lane in lanes) or "none"
    raise ValidationFailed.field("lane", f"No {capability} lane of the registry is called '{lane_id}'. Send one of: "
                                         f"{names}.")


def gateway_chat(*, messages: list, tools: list | None = None, tool_choice: str | dict | None = None,
                 lane: str | None = None, capability: str = "chat", language: str | None = None,
                 temperature: float | None = None, max_tokens: int | None = None, max_eur: float | None = None,
                 deadline: float | None = None, first_token_timeout: float | None = None,
                 stream: bool = True, **sampling: Any) -> ChatStream:
    """One turn of a conversation through the registry's lanes: a ChatStream of its
    events (TextDelta…, ToolCall…, ChatDone), returned once a lane has started to answer.

    `messages`, `tools`, `tool_choice`, `temperature`, `max_tokens` and the `sampling`
    fields (`top_p`, `stop`, `seed`, `frequency_penalty`, `presence_penalty`,
    `response_format`: ChatRequest's) are the OpenAI Chat Completions wire format's (checked by gateway_app.turns.chat_request; ValidationFailed
    names each problem). `lane` names a lane of `capability` (chat or code) to try
    first; the others of the route follow in the gateway's order (zero-euro first, paid
    lanes only within `max_eur`, default GATEWAY_MAX_EUR), as for /v1/agent. A lane
    that has not produced its first token within `first_token_timeout` seconds
    (GATEWAY_FIRST_TOKEN_SEC), fails or answers malformed is skipped to the next (and
    cooled down as /v1/agent's lanes are); the whole turn has `deadline` seconds
    (GATEWAY_DEADLINE_SEC). With `stream=False` the whole answer is read before the
    first event is handed on, so a lane that fails mid-answer is skipped too.

    Raises NoLaneAnswered (503) or OverBudget (422) when no lane answers."""
    if capability not in TURN_CAPABILITIES:
        raise ValidationFailed.field("capability", f"Send one of: {', '.join(TURN_CAPABILITIES)}.")
    request = chat_request(messages=messages, tools=tools, tool_choice=tool_choice, temperature=temperature,
                           max_tokens=max_tokens, language=language, **sampling)
    named = turn_lane(lane, capability) if lane is not None else None
    max_eur = settings.GATEWAY_MAX_EUR if max_eur is None else max_eur
    seconds = settings.GATEWAY_DEADLINE_SEC if deadline is None else deadline
    first_token_sec = settings.GATEWAY_FIRST_TOKEN_SEC if first_token_timeout is None else first_token_timeout
    steps = turn_steps(request, capability=capability, max_eur=max_eur, lane=named)
    return ChatStream(steps, request, max_eur=max_eur, what=capability, first_token_sec=first_token_sec,
                      ends_by=time.monotonic() + seconds, whole=not stream)


def lane_first(steps: Sequence[Step], lane: str | None) -> list[Step]:
    """`steps` with the named lane's first (when the plan has it), the others in their order."""
    return sorted(steps, key=lambda step: step.lane.id != lane) if lane else list(steps)


def gateway_speak(*, text: str, voice: str | None = None, language: str | None = None,
                  max_eur: float | None = None, lane: str | None = None) -> GatewayAnswer:
    """POST /v1/speak (and /v1/audio/speech, which may name a `lane` to try first): a
    GatewayAnswer whose result is a RenderedAudio (MP3)."""
    max_eur = settings.GATEWAY_MAX_EUR if max_eur is None else max_eur
    steps = lane_first(speak_steps(text=text, voice=voice, language=language, max_eur=max_eur), lane)
    answer = answer_through(steps, max_eur=max_eur, what="tts")
    rendered, _ = answer.result
    cost = lane_cost(answer.step.lane, Measures(characters=len(text)))
    record_success(answer.step, cost, characters=len(text), audio_seconds=rendered.duration_sec)
    return GatewayAnswer(result=rendered, lane=answer.step.lane.id, mode=answer.step.mode, attempts=answer.attempts,
                         cost_eur=cost)


def gateway_transcribe(*, audio: bytes, language: str | None = None, max_eur: float | None = None,
                       phrases: list[str] | None = None, lane: str | None = None) -> GatewayAnswer:
    """POST /v1/transcribe (and /v1/audio/transcriptions, which may name a `lane` to
    try first): a GatewayAnswer whose result is the Transcript.

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
    steps = lane_first(transcribe_steps_for(decoded.pcm, language=language, phrases=phrases or None,
                                            seconds=seconds, max_eur=max_eur), lane)
    answer = answer_through(steps, max_eur=max_eur, what="stt")
    cost = lane_cost(answer.step.lane, Measures(audio_seconds=seconds))
    record_success(answer.step, cost, audio_seconds=seconds)
    return GatewayAnswer(result=answer.result, lane=answer.step.lane.id, mode=answer.step.mode,
                         attempts=answer.attempts, cost_eur=cost)
