"""Speech through the registry's tts and stt lanes: the plans, and the lane loop of
render, transcription and the agent.

A plan lists the routed lanes of a language in the cost policy's order
(registry_app.lanes.plans: zero-euro first in the router's order, then paid within
the budget), each one of:

- a lane this process serves (its endpoint is the speech module's path and its id
  names a local engine, e.g. `tts-espeak-de`): the local engines, chosen as ever
  (speech_app.services.local_synthesizer / local_recognizer);
- a remote lane in `api` mode (speech_app.remote): an HTTP endpoint (the registry's,
  or GATEWAY_ENDPOINT_<LANE>) that speaks the OpenAI audio API; a hosted API
  (`hosting: api`) needs GATEWAY_KEY_<LANE>. Speech lanes have no mock: such a lane
  is called in every GATEWAY_MODE (GATEWAY_MODE_<LANE> other than `api` switches it
  off). A tts lane is used for a request that names no voice, or only its language,
  with its first voice (`params.voices`), and for a voice it lists by that voice;
- skipped, with the reason (in a cooldown, no key, no such voice, a lane whose
  `params.protocol` streams — speech_app.streaming, the voice agent's only, …).

When the route names no local lane (no registry, or a language no local lane lists)
the local engines join as `tts-local` / `stt-local` after the zero-euro lanes,
before any paid one: they cost nothing, and a paid lane is never touched while a
zero-euro lane answers. Render, transcription and the agent always have them (the
engines of this process serve whether or not a registry is loaded); the gateway's
/v1 paths respect a local lane that is degraded or cooling down (gateway_app.voice).

Without a remote lane to call, nothing changes: `synthesizer_for` and
`recognizer_for` give the local engine itself. With one, they give a
`LaneSynthesizer` / `LaneRecognizer`, which try the plan's lanes in order with the
gateway's timeouts, record a cooldown for a lane that fails as unwell (connection
error, timeout, 5xx, 429), count the remote lanes' use (registry_app.lanes.outcomes:
the gateway's usage), and end with the local engines.
"""
import time
from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings

from console.engines import SPEECH_MODULE_ENDPOINTS, engine_probes, local_engine_id
from console.errors import ApiError
from registry_app.lanes.config import lane_setting, lane_variable
from registry_app.lanes.cost import Measures, lane_cost
from registry_app.lanes.failover import LaneFailure, Step, run_steps
from registry_app.lanes.outcomes import record_failure, record_success
from registry_app.lanes.plans import api_target, budget_skip, lane_model, ordered_lanes
from registry_app.routing import UNREAD, Route, price_group, route
from registry_app.snapshot import SnapshotLane
from speech_app.decode import SAMPLE_RATE
from speech_app.errors import SttUnavailable, TtsUnavailable
from speech_app.recognition import AUTO_LANGUAGE, Recognizer, Transcript
from speech_app.remote import RemoteRecognizer, RemoteSynthesizer
from speech_app.streaming import BATCH_PROTOCOL, lane_protocol
from speech_app.stt import Deadline
from speech_app.tts import Speech, Synthesizer


def _builtin(capability, name):
    return SnapshotLane.from_entry({
        "id": f"{capability}-local", "name": name, "capability": capability, "provider": "intern",
        "hosting": "self-hosted", "access": "speech-module", "endpoint": SPEECH_MODULE_ENDPOINTS[capability],
        "health": "/api/voice/health", "cost": {"model": "self-hosted", "unit": "compute", "eur": 0},
        "status": "live", "priority": 0, "quality_tier": "mid", "latency_class": "fast", "params": {},
        "test": "", "source": "speech_app", "notes": "Built in: this process's own engines.",
    })


BUILTIN_LOCAL_LANES = {"tts": _builtin("tts", "This service's speech synthesis"),
                       "stt": _builtin("stt", "This service's speech recognition")}


def is_local(lane):
    return local_engine_id(lane, engine_probes.probes) is not None


@dataclass(frozen=True)
class PlannedLane:
    """One lane of a speech plan: local (the engines of this process), a remote engine
    to call, or skipped with (outcome, detail)."""

    lane: SnapshotLane
    mode: str  # "local" or "api"
    engine: object = None  # RemoteSynthesizer / RemoteRecognizer of an api lane
    skip: tuple = ()


def _remote_off(lane):
    explicit = lane_setting(lane.id, "MODE")
    if explicit and explicit != "api":
        return ("unavailable", f"{lane_variable(lane.id, 'MODE')} is '{explicit}': speech lanes are called in api "
                               "mode only")
    return ()


def _streams(lane):
    """(outcome, detail) for a lane whose protocol streams (speech_app.streaming): only
    the conversation core calls it, not the batch loop of render, transcription and the
    gateway."""
    protocol = lane_protocol(lane)
    if protocol != BATCH_PROTOCOL:
        return ("unavailable", f"speaks the streaming protocol {protocol}: used by the voice agent only")
    return ()


def _remote_tts(lane, language, voice):
    streams = _streams(lane)
    if streams:
        return PlannedLane(lane, "api", skip=streams)
    voices = [name for name in (lane.entry.get("params") or {}).get("voices") or () if isinstance(name, str)]
    if voice and voice != language and voice not in voices:
        listed = ", ".join(voices) or "none listed"
        return PlannedLane(lane, "api", skip=("unavailable", f"has no voice '{voice}' (its voices: {listed})"))
    endpoint, key, skip = api_target(lane)
    skip = _remote_off(lane) or skip
    if skip:
        return PlannedLane(lane, "api", skip=skip)
    spoken = voice if voice in voices else (voices[0] if voices else voice or language)
    language = language or next(iter(sorted(lane.languages)), "")
    return PlannedLane(lane, "api", RemoteSynthesizer(lane, endpoint=endpoint, key=key, model=lane_model(lane),
                                                      voice=spoken, language=language))


def _remote_stt(lane, language):
    streams = _streams(lane)
    if streams:
        return PlannedLane(lane, "api", skip=streams)
    endpoint, key, skip = api_target(lane)
    skip = _remote_off(lane) or skip
    if skip:
        return PlannedLane(lane, "api", skip=skip)
    return PlannedLane(lane, "api", RemoteRecognizer(lane, endpoint=endpoint, key=key, model=lane_model(lane)))


@dataclass(frozen=True)
class SpeechPlan:
    capability: str
    lanes: list  # PlannedLanes in the order they are tried
    route: Route  # the registry's route it was made of

    def calls_remote(self, max_eur):
        """Whether a remote lane may be called (one that is free, or paid with a budget)."""
        return any(item.engine is not None and (price_group(item.lane.eur) == 0 or max_eur > 0)
                   for item in self.lanes)


def _plan(capability, language, remote, *, always_local, current=UNREAD):
    routed = route(capability, language=language, current=current)
    planned = []
    for lane, cooldown in ordered_lanes(routed):
        mode = "local" if is_local(lane) else "api"
        if cooldown:
            planned.append(PlannedLane(lane, mode, skip=("cooldown", cooldown)))
        else:
            planned.append(PlannedLane(lane, "local") if mode == "local" else remote(lane))
    if always_local:
        missing = not any(item.mode == "local" and not item.skip for item in planned)
    else:  # the gateway's rule: a local lane that is degraded or cooling down is respected
        degraded = [exclusion.lane for exclusion in routed.excluded if exclusion.code == "degraded"]
        missing = not any(item.mode == "local" for item in planned) and not any(map(is_local, degraded))
    if missing:
        at = next((n for n, item in enumerate(planned) if price_group(item.lane.eur) != 0), len(planned))
        planned.insert(at, PlannedLane(BUILTIN_LOCAL_LANES[capability], "local"))
    return SpeechPlan(capability, planned, routed)


def tts_plan(language, voice=None, *, always_local=True, current=UNREAD):
    """The SpeechPlan of speaking in `language`; `voice` the voice the request named
    (None: any, each lane its own); `current` the registry snapshot, when read already."""
    return _plan("tts", language, lambda lane: _remote_tts(lane, language, voice), always_local=always_local,
                 current=current)


def stt_plan(language, *, always_local=True):
    """The SpeechPlan of recognising `language` ("auto": lanes of any language)."""
    language = None if language == AUTO_LANGUAGE else language
    return _plan("stt", language, lambda lane: _remote_stt(lane, language), always_local=always_local)


def _local(call):
    """A call to this process's engines as a lane's: a server-side failure (no model for
    the language, no engine) is `unavailable` and moves on without a cooldown (it
    concerns this request, not the lane); a client's mistake ends the request. The
    engine's own error is kept on the failure, so that the loop can answer with it
    when no lane answered."""
    def run(timeout):
        try:
            return call(timeout)
        except ApiError as exc:
            if exc.status >= 500:
                raise LaneFailure("unavailable", exc.message, error=exc) from None
            raise
    return run


def plan_steps(plan, *, measures, max_eur, local_call, remote_call):
    """The Steps of `plan`: `local_call(timeout)` for the local lanes (they keep their
    own time), `remote_call(engine, timeout)` for the remote ones within the budget."""
    steps = []
    for item in plan.lanes:
        if item.skip:
            steps.append(Step(item.lane, item.mode, skip=item.skip))
        elif item.mode == "local":
            steps.append(Step(item.lane, "local", call=_local(local_call), own_time=True))
        else:
            estimate = lane_cost(item.lane, measures)
            skip = budget_skip(item.lane, estimate, max_eur)
            if skip:
                steps.append(Step(item.lane, "api", skip=skip, estimate_eur=estimate))
            else:
                steps.append(Step(item.lane, "api", call=lambda timeout, engine=item.engine: remote_call(engine, timeout),
                                  estimate_eur=estimate))
    return steps


def _failed(step, failure):
    # Outside the gateway only the remote lanes leave a trace: render and transcription
    # through this process's engines were never counted, and still are not.
    if step.mode == "api":
        record_failure(step, failure)


def _no_answer(capability, attempts, errors):
    """The error when no lane answered: the local engine's own (tts_unavailable,
    stt_unavailable, stt_busy …) when it was asked, else one that names every attempt."""
    if errors:
        return errors[-1]
    tried = "; ".join(f"{attempt.lane} {attempt.outcome}" + (f" ({attempt.detail})" if attempt.detail else "")
                      for attempt in attempts)
    unavailable = TtsUnavailable if capability == "tts" else SttUnavailable
    return unavailable(f"No {capability} lane could answer: {tried or 'none is routed'}.",
                       details={"attempts": [attempt.as_json() for attempt in attempts]})


def speech_answer(capability, steps, *, ends_by, max_eur):
    """The Answer of the first step that answers (registry_app.lanes.failover.run_steps,
    with each remote call bounded by GATEWAY_TIMEOUT_SEC and all of them by `ends_by`);
    the local engine's error, or TtsUnavailable/SttUnavailable, when none did."""
    errors = []

    def on_failure(step, failure):
        if failure.error is not None:
            errors.append(failure.error)
        _failed(step, failure)

    answer = run_steps(steps, deadline=ends_by, attempt_timeout=settings.GATEWAY_TIMEOUT_SEC, max_eur=max_eur,
                       on_failure=on_failure)
    if answer.step is None:
        raise _no_answer(capability, answer.attempts, errors)
    return answer


def answered(answer, measures, **counts):
    """Counts a remote lane's answer in its usage (the local ones are not, outside the gateway)."""
    if answer.step.mode == "api":
        record_success(answer.step, lane_cost(answer.step.lane, measures), **counts)


class LaneSynthesizer(Synthesizer):
    """Synthesis through a plan with a remote lane: each call tries the lanes in order."""

    id, name, engine, mode = "lanes", "Registry lanes", "lanes", "api"

    def __init__(self, plan, *, local, local_voice):
        # local(): this process's engine for the request, which speaks `local_voice`
        # (the request's voice, or its language where it named a remote lane's voice).
        self.plan, self._local, self.local_voice = plan, local, local_voice

    @property
    def version(self) -> str:
        return "lanes"  # render keys by the engine that answered (speech_app.services.speech_render)

    def serves(self, voice: str) -> bool:
        return True

    def check_voice(self, voice):
        pass  # each lane checks its own: a remote lane speaks its voice, the local engine the request's

    def _max_eur(self):
        return settings.GATEWAY_MAX_EUR

    def synthesize(self, text: str, *, voice: str) -> Speech:
        measures = Measures(characters=len(text))
        ends_by = time.monotonic() + settings.GATEWAY_DEADLINE_SEC
        steps = plan_steps(self.plan, measures=measures, max_eur=self._max_eur(),
                           local_call=lambda timeout: self._local().synthesize(text, voice=self.local_voice),
                           remote_call=lambda engine, timeout: engine.within(timeout, ends_by).synthesize(text))
        answer = speech_answer("tts", steps, ends_by=ends_by, max_eur=self._max_eur())
        answered(answer, measures, characters=len(text), audio_seconds=answer.result.duration_sec)
        return answer.result

    def stream(self, text: str, *, voice: str) -> Iterator[Speech]:
        """Sentence by sentence from the first lane that answers; a lane that fails after
        its first sentences hands the rest to the next lane (the local engines last),
        which goes on after the sentences already given (every engine cuts a text into
        the same sentences)."""
        measures = Measures(characters=len(text))
        steps = plan_steps(self.plan, measures=measures, max_eur=self._max_eur(),
                           local_call=lambda timeout: self._local().stream(text, voice=self.local_voice),
                           remote_call=lambda engine, timeout: engine.within(timeout).stream(text))
        given, seconds, errors = 0, 0.0, []
        for step in steps:
            if step.skip:
                continue
            try:
                for n, speech in enumerate(step.call(settings.GATEWAY_TIMEOUT_SEC)):
                    if n >= given:
                        given, seconds = given + 1, seconds + speech.duration_sec
                        yield speech
            except LaneFailure as failure:
                errors += [failure.error] if failure.error is not None else []
                _failed(step, failure)
                continue
            except ApiError as exc:  # the local engine's stream raises as it goes
                if exc.status < 500:
                    raise
                errors.append(exc)
                continue
            if step.mode == "api":
                record_success(step, lane_cost(step.lane, measures), characters=len(text), audio_seconds=seconds)
            return
        raise _no_answer("tts", [], errors)


class LaneRecognizer(Recognizer):
    """Recognition through a plan with a remote lane: each call tries the lanes in order
    within the caller's deadline, the local engines last."""

    id, name, engine, mode = "lanes", "Registry lanes", "lanes", "api"

    def __init__(self, plan, *, local):
        self.plan, self._local = plan, local  # local(): this process's engine for the language

    def serves(self, language: str) -> bool:
        return True

    def transcribe(self, pcm: bytes, *, language: str, phrases: list[str] | None = None,
                   deadline: Deadline) -> Transcript:
        measures, max_eur = Measures(audio_seconds=len(pcm) / 2 / SAMPLE_RATE), settings.GATEWAY_MAX_EUR
        steps = transcribe_steps(self.plan, pcm, language=language, phrases=phrases, measures=measures,
                                 max_eur=max_eur, local=self._local)
        answer = speech_answer("stt", steps, ends_by=time.monotonic() + deadline.remaining(), max_eur=max_eur)
        answered(answer, measures, audio_seconds=measures.audio_seconds)
        return answer.result


def transcribe_steps(plan, pcm, *, language, phrases, measures, max_eur, local):
    """The Steps of recognising `pcm` (16 kHz mono) through `plan`; `local()` is this
    process's engine. Each lane's recognition gets the time its step is given as its
    deadline (the local engines: all that is left)."""
    def recognise(engine, timeout):
        return engine.transcribe(pcm, language=language, phrases=phrases, deadline=Deadline(timeout))
    return plan_steps(plan, measures=measures, max_eur=max_eur,
                      local_call=lambda timeout: recognise(local(), timeout), remote_call=recognise)
