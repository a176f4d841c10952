"""A registry of engine probes: what speech engines this process can use right now.

`/health` and `/v2/meta/engines` report from here. Each engine registers a probe
(speech_app registers the real synthesis and recognition engines); a probe answers
from the running system, never from configuration alone.
"""
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from console.warmup import at_worker_start


@dataclass(frozen=True)
class EngineStatus:
    id: str
    kind: str  # "tts" or "stt"
    name: str
    engine: str
    mode: str
    languages: tuple = ()
    usable_now: bool = False
    reason: str = ""

    def as_json(self):
        data = {
            "id": self.id, "kind": self.kind, "name": self.name, "engine": self.engine,
            "mode": self.mode, "languages": list(self.languages), "usableNow": self.usable_now,
        }
        if self.reason:
            data["reason"] = self.reason
        return data


@dataclass
class ProbeRegistry:
    probes: dict = field(default_factory=dict)
    # engine id -> (the probe, when it answered on time.monotonic, its answer)
    _answers: dict = field(default_factory=dict, repr=False)

    def register(self, engine_id, probe):
        """`probe()` returns an EngineStatus; registering the same id replaces it."""
        self.probes[engine_id] = probe

    def statuses(self, max_age=0.0):
        """Every probe's answer, asked now; with `max_age`, an answer the same probe gave
        less than `max_age` seconds ago is reused instead (a replaced probe is asked anew)."""
        answers = []
        for engine_id, probe in list(self.probes.items()):
            kept = self._answers.get(engine_id)
            now = time.monotonic()
            if kept is None or kept[0] is not probe or now - kept[1] >= max_age:
                kept = (probe, now, probe())
                self._answers[engine_id] = kept
            answers.append(kept[2])
        return answers

    def forget_answers(self):
        self._answers.clear()


engine_probes = ProbeRegistry()
# Every worker asks its probes once when it starts (the synthesis probe speaks a test
# sentence then), so that /health finds their answers there.
at_worker_start(engine_probes.statuses)
# Telephony carriers register here too; their probes return a dict
# `{"id", "name", "usableNow"}` (CONTRACT §7, /v2/meta/engines).
carrier_probes = ProbeRegistry()
# Further sections of GET /health by key, each a function returning its JSON value
# (calls_app adds `sipCarriers`: each SIP trunk's registration state); console cannot
# import the apps above it, so they register here.
health_sections: dict[str, Callable[[], Any]] = {}


# Paths of this service's speech module: a registry lane whose endpoint is one of
# them is served by this process, by the local engine its id names.
SPEECH_MODULE_ENDPOINTS = {"tts": "/api/voice/speak", "stt": "/api/voice/transcribe"}


def local_engine_id(lane, engine_ids):
    """The id of this process's engine that serves `lane` (a registry lane), or None:
    the lane's endpoint is this service's speech module and its id names the engine
    (`tts-espeak-de` → `espeak`)."""
    if lane.entry.get("endpoint") != SPEECH_MODULE_ENDPOINTS.get(lane.capability):
        return None
    return next((engine_id for engine_id in lane.id.split("-") if engine_id in engine_ids), None)


def lane_status(lane, local_engines):
    """A tts/stt lane of the registry as an engine entry; `usableNow` only when this
    process serves the lane with a usable engine that speaks one of its languages.
    Lanes reached through other services (gateways, hosted APIs) are not usable here
    (this process cannot vouch for them) unless speech_app, which speaks their
    streaming protocols, says so (speech_app.selectors.speech_lane_states)."""
    entry = lane.entry
    engines = {engine.id: engine for engine in local_engines if engine.kind == lane.capability}
    served_by = engines.get(local_engine_id(lane, engines))
    languages = sorted(lane.languages)
    usable = bool(served_by and served_by.usable_now
                  and (not languages or set(languages) & set(served_by.languages)))
    return {
        "id": lane.id, "kind": lane.capability, "name": entry.get("name", lane.id),
        "engine": served_by.engine if served_by else lane.provider,
        "mode": served_by.mode if served_by else lane.hosting,
        "languages": languages, "usableNow": usable, "source": "registry",
        "status": lane.status, "servedBy": served_by.id if served_by else None,
    }
