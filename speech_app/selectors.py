"""Reads of speech_app: the voices an assistant may speak with (/v2/meta/voices) and
the state of the registry's speech lanes (/v2/meta/engines)."""
from dataclasses import dataclass

from console.engines import EngineStatus, lane_status
from registry_app.lanes.failover import LaneFailure
from registry_app.routing import USABLE_STATUSES, lane_state
from registry_app.selectors import lane_errors
from registry_app.snapshot import Snapshot, SnapshotLane
from speech_app.lanes import is_local
from speech_app.piper import piper_voices
from speech_app.streaming import BATCH_PROTOCOL, lane_protocol, lane_voices, protocol_module, streaming_target


@dataclass(frozen=True)
class OfferedVoice:
    """A voice of a callable tts lane: `id` is what an assistant's `voice` names."""

    id: str  # `<lane>:<voice>`, or a bare Piper voice this process has outside the registry's lanes
    lane: str
    voice: str
    provider: str
    languages: tuple[str, ...]
    local: bool  # spoken by this process's engines (no audio or text leaves it)
    protocol: str  # the lane's wire protocol (`local` for this process's engines)
    usable_now: bool
    reason: str = ""  # why it is not usable now

    def as_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "id": self.id, "lane": self.lane, "voice": self.voice, "provider": self.provider,
            "languages": list(self.languages), "local": self.local, "protocol": self.protocol,
            "usableNow": self.usable_now}
        if self.reason:
            data["reason"] = self.reason
        return data


def remote_lane_state(lane: SnapshotLane) -> tuple[bool, str]:
    """(usable now, why not) of a remote lane: its module and key are there, no cooldown."""
    try:
        module = protocol_module(lane)
        if module is not None:
            streaming_target(lane, module)
    except LaneFailure as failure:
        return False, failure.detail
    cooldown = lane_state().cooldowns.get(lane.id)
    if cooldown is not None:
        return False, f"cools down: {cooldown.reason}"
    return True, ""


def offered_voices(current: Snapshot | None, local_engines: list[EngineStatus]) -> list[OfferedVoice]:
    """The voices of the registry's callable tts lanes (status live or key-ready), in
    the document's order: the local lanes' voices (eSpeak NG, Piper) where this process
    serves the lane, each remote lane's `params.voices`; then the operator's Piper voices
    (PIPER_VOICES) no lane lists, by their bare names."""
    offered: list[OfferedVoice] = []
    for lane in current.by_capability.get("tts", ()) if current is not None else ():
        if lane.status not in USABLE_STATUSES:
            continue
        if is_local(lane):
            status = lane_status(lane, local_engines)
            usable, reason = bool(status["usableNow"]), "" if status["usableNow"] else "no engine of this process serves it"
            protocol, local = "local", True
        else:
            (usable, reason), protocol, local = remote_lane_state(lane), lane_protocol(lane), False
        offered += [OfferedVoice(id=f"{lane.id}:{voice}", lane=lane.id, voice=voice, provider=lane.provider,
                                 languages=tuple(sorted(lane.languages)), local=local, protocol=protocol,
                                 usable_now=usable, reason=reason) for voice in lane_voices(lane)]
    listed = {item.voice for item in offered if item.local}
    offered += [OfferedVoice(id=name, lane="tts-local", voice=name, provider="Piper",
                             languages=(spec.language,) if spec.language else (), local=True, protocol="local",
                             usable_now=True) for name, spec in sorted(piper_voices().items()) if name not in listed]
    return offered


def speech_lane_states(current: Snapshot | None, local_engines: list[EngineStatus]) -> list[dict[str, object]]:
    """The registry's tts and stt lanes as /v2/meta/engines lists them
    (console.engines.lane_status): a lane this process serves is usable with its
    engine; a streaming lane (speech_app.streaming: Deepgram, Azure, ElevenLabs,
    Cartesia) when its module and key are there and it does not cool down, else with
    the reason; every lane with its last failed call (`lastError`, a wrong key: the
    provider's 401) or null."""
    errors = lane_errors()
    states = []
    for kind in ("tts", "stt"):
        for lane in current.by_capability.get(kind, ()) if current is not None else ():
            state = lane_status(lane, local_engines)
            if not is_local(lane) and lane.status in USABLE_STATUSES and lane_protocol(lane) != BATCH_PROTOCOL:
                usable, reason = remote_lane_state(lane)
                state.update({"usableNow": usable, "mode": "api"}, **({"reason": reason} if reason else {}))
            error = errors.get(lane.id)
            state["lastError"] = error.as_json() if error is not None else None
            states.append(state)
    return states
