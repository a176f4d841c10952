"""The voice gateway's plans: /v1/speak and /v1/transcribe routed by the registry's
tts and stt lanes.

The lanes served by this process's own engines (their endpoint is this service's
speech module and their id names a local engine, e.g. `tts-espeak-de`) come first:
they cost nothing. They are called through `speech_app.services`. Hosted speech APIs
follow in `api` mode when the lane has a key (`GATEWAY_KEY_<LANE>`) and an HTTP
endpoint (`GATEWAY_ENDPOINT_<LANE>`, or the registry's), with the budget, fallback
and cooldown of the AI gateway. When the route names no local lane at all (no
registry, or a language no local lane lists) the local engines are tried anyway,
first, as `tts-local` / `stt-local`: they serve with or without a registry, like
the speech module. A local lane that is degraded or in a cooldown is respected.
"""
import hashlib
from functools import partial

from console.engines import SPEECH_MODULE_ENDPOINTS, engine_probes, local_engine_id
from console.errors import ApiError
from gateway_app.providers import speech_api
from registry_app.lanes.config import lane_setting, lane_variable
from registry_app.lanes.cost import lane_cost
from registry_app.lanes.failover import LaneFailure, Step
from registry_app.lanes.plans import budget_skip, http_url, lane_model, ordered_lanes
from registry_app.routing import route
from registry_app.snapshot import SnapshotLane
from speech_app.cache import RenderedAudio
from speech_app.decode import decode_to_pcm


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


def _local(call):
    """A call to this process's engines: a server-side failure (no model for the
    language, no engine) moves on to the next lane without a cooldown (it concerns
    this request's language, not the lane); a client's mistake ends the request."""
    def run(timeout):
        try:
            return call()
        except ApiError as exc:
            if exc.status >= 500:
                raise LaneFailure("unavailable", exc.message) from None
            raise
    return run


def hosted_step(lane, measures, max_eur, make_call):
    estimate = lane_cost(lane, measures)
    skip = budget_skip(lane, estimate, max_eur)
    if skip:
        return Step(lane, "api", skip=skip, estimate_eur=estimate)
    endpoint = lane_setting(lane.id, "ENDPOINT") or lane.entry.get("endpoint")
    if not http_url(endpoint):
        return Step(lane, "api", skip=("unavailable", f"no HTTP endpoint: set {lane_variable(lane.id, 'ENDPOINT')}"))
    key = lane_setting(lane.id, "KEY")
    if not key:
        return Step(lane, "api", skip=("no_key", f"no key: set {lane_variable(lane.id, 'KEY')}"))
    return Step(lane, "api", call=partial(make_call, endpoint, key, lane_model(lane)), estimate_eur=estimate)


def voice_steps(capability, *, language, measures, max_eur, local_call, hosted_call):
    routed = route(capability, language=language)
    listed = ordered_lanes(routed)
    local, hosted = [], []
    for lane, cooldown in listed:
        mine = is_local(lane)
        if cooldown:
            (local if mine else hosted).append(Step(lane, "local" if mine else "api", skip=("cooldown", cooldown)))
        elif mine:
            local.append(Step(lane, "local", call=_local(local_call)))
        else:
            hosted.append(hosted_step(lane, measures, max_eur, hosted_call))
    degraded = [exclusion.lane for exclusion in routed.excluded if exclusion.code == "degraded"]
    if not local and not any(is_local(lane) for lane in degraded):
        local.append(Step(BUILTIN_LOCAL_LANES[capability], "local", call=_local(local_call)))
    return local + hosted


def rendered_from_hosted(mp3):
    """A hosted API's MP3 as the speech module's RenderedAudio (its duration read from
    the audio itself, which also proves it is audio)."""
    try:
        decoded = decode_to_pcm(mp3)
    except ApiError:
        raise LaneFailure("bad_response", "the answer is not decodable audio") from None
    return RenderedAudio(key=hashlib.sha256(mp3).hexdigest(), mp3=mp3, duration_sec=round(decoded.duration_sec, 2))


def hosted_speak(text, voice):
    def call(endpoint, key, model, timeout):
        return rendered_from_hosted(speech_api.synthesize(endpoint=endpoint, key=key, model=model, text=text,
                                                          voice=voice, timeout=timeout))
    return call


def hosted_transcribe(audio, language):
    def call(endpoint, key, model, timeout):
        return speech_api.transcribe(endpoint=endpoint, key=key, model=model, audio=audio, language=language,
                                     timeout=timeout)
    return call
