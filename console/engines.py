"""A registry of engine probes: what speech engines this process can use right now.

`/health` and `/v2/meta/engines` report from here. Each engine registers a probe
(the audio issue adds the real synthesis and recognition engines); a probe answers
from the running system, never from configuration alone.
"""
import ctypes.util
import importlib.util
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


def probe_espeak():
    """eSpeak NG through pyttsx3: usable when both the library and the driver load."""
    library = ctypes.util.find_library("espeak-ng")
    driver = importlib.util.find_spec("pyttsx3") is not None
    missing = [what for what, ok in (("libespeak-ng1", library), ("pyttsx3", driver)) if not ok]
    return EngineStatus(
        id="espeak", kind="tts", name="eSpeak NG", engine="espeak-ng", mode="offline",
        languages=("de",), usable_now=not missing,
        reason=f"missing: {', '.join(missing)}" if missing else "",
    )


engine_probes.register("espeak", probe_espeak)
