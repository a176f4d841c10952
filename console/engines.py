"""A registry of engine probes: what speech engines this process can use right now.

`/health` and `/v2/meta/engines` report from here. Each engine registers a probe
(console.speech registers the real synthesis and recognition engines); a probe answers
from the running system, never from configuration alone.
"""
from dataclasses import dataclass, field


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

    def register(self, engine_id, probe):
        """`probe()` returns an EngineStatus; registering the same id replaces it."""
        self.probes[engine_id] = probe

    def statuses(self):
        return [probe() for probe in self.probes.values()]


engine_probes = ProbeRegistry()
# Telephony carriers register here too; their probes return a dict
# `{"id", "name", "usableNow"}` (CONTRACT §7, /v2/meta/engines).
carrier_probes = ProbeRegistry()
