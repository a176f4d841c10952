"""The `model` of the OpenAI-compatible paths: what `GET /v1/models` lists and what a
request's `model` names (docs/api.md, "OpenAI-compatible model names").

A chat request's `model` is, in this order: `auto` (the registry's order by its cost
policy); a chat or code lane's id; the provider's name of a lane (what the lane is
sent, `lane_model`: `gpt-4.1` names the lane whose `params.model` it is); or one of
OpenAI's common names below, which stand for `auto`. Anything else is 404
`model_not_found`. The speech paths take OpenAI's speech and transcription model
names, which stand for the registry's tts and stt lanes in their order, or a tts or
stt lane's id, tried first.
"""
import datetime as dt
from dataclasses import dataclass
from typing import Any

from gateway_app.errors import ModelNotFound
from gateway_app.planning import TURN_CAPABILITIES, ChatQuery, chat_step, turn_lanes
from registry_app import snapshot
from registry_app.lanes.plans import lane_model, ordered_lanes
from registry_app.routing import route
from registry_app.snapshot import SnapshotLane

AUTO = "auto"
# OpenAI's chat model names a client sends by default (SDK examples, Open WebUI,
# LibreChat, n8n): each is answered by the router, as `auto`.
CHAT_ALIASES = ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4-turbo", "gpt-4",
                "gpt-3.5-turbo", "gpt-5", "gpt-5-mini", "gpt-5-nano", "o1", "o3", "o3-mini", "o4-mini",
                "chatgpt-4o-latest")
# OpenAI's names of its transcription and speech models: the registry's stt and tts lanes.
TRANSCRIPTION_MODELS = ("whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe", AUTO)
SPEECH_MODELS = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts", AUTO)
OWNER = "stimmwerk"


@dataclass(frozen=True)
class ChatModel:
    """What a chat request's `model` stands for: the lane to try first (None: the
    router's order) and the capability of the turn."""

    name: str
    lane: SnapshotLane | None
    capability: str


def callable_turn_lanes() -> list[SnapshotLane]:
    """The chat and code lanes the gateway can call now, a cooldown aside: those the
    registry's route offers that are reachable in their mode (with their key)."""
    lanes = []
    for capability in TURN_CAPABILITIES:
        routed = route(capability)
        candidates = turn_lanes(capability) if routed.version is None else [lane for lane, _ in ordered_lanes(routed)]
        probe = ChatQuery(prompt="", capability=capability)
        lanes += [lane for lane in candidates if chat_step(lane, None, probe, float("inf")).call is not None]
    return lanes


def chat_model(name: str) -> ChatModel:
    """The ChatModel `name` stands for, or 404 `model_not_found` listing what may be sent."""
    if name == AUTO:
        return ChatModel(name, None, "chat")
    every = [(lane, capability) for capability in TURN_CAPABILITIES for lane in turn_lanes(capability)]
    for lane, capability in every:
        if lane.id == name:
            return ChatModel(name, lane, capability)
    for lane, capability in every:
        if lane_model(lane) == name:
            return ChatModel(name, lane, capability)
    if name in CHAT_ALIASES:
        return ChatModel(name, None, "chat")
    ids = [AUTO, *(lane.id for lane in callable_turn_lanes())]
    raise ModelNotFound(f"The model '{name}' does not exist here. Send one of: {', '.join(ids)} (GET /v1/models), "
                        f"or one of OpenAI's names that stand for auto: {', '.join(CHAT_ALIASES)}.",
                        details={"param": "model", "model": name, "models": ids})


def speech_model(name: str, names: tuple[str, ...], capability: str) -> str | None:
    """The lane a speech path's `model` names first: None for one of OpenAI's `names`
    (the registry's order), a `capability` (tts or stt) lane's id for itself; else 404
    `model_not_found`."""
    if name in names:
        return None
    current = snapshot.current()
    lanes = [lane.id for lane in current.by_capability.get(capability, ())] if current is not None else []
    if name in lanes:
        return name
    raise ModelNotFound(f"The model '{name}' does not exist here. Send one of: {', '.join(names + tuple(lanes))}.",
                        details={"param": "model", "model": name, "models": [*names, *lanes]})


def _created() -> int:
    """OpenAI's `created` of every model: the registry document's `updated` day (Unix
    seconds, UTC midnight), 0 without one."""
    current = snapshot.current()
    updated = (current.document.get("updated") if current is not None else None) or ""
    try:
        day = dt.date.fromisoformat(updated)
    except (TypeError, ValueError):
        return 0
    return int(dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC).timestamp())


def model_object(model_id: str, owned_by: str, created: int) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": created, "owned_by": owned_by}


def model_list() -> list[dict[str, Any]]:
    """GET /v1/models: `auto` and every callable chat and code lane, in OpenAI's shape."""
    created = _created()
    return [model_object(AUTO, OWNER, created),
            *(model_object(lane.id, lane.provider, created) for lane in callable_turn_lanes())]


def model_named(name: str) -> dict[str, Any]:
    """GET /v1/models/{id}: any name a chat request may send, or 404 `model_not_found`."""
    model = chat_model(name)
    return model_object(name, model.lane.provider if model.lane is not None else OWNER, _created())
