"""The checks of what an assistant names (console.assistants.references): registered
by this app, which may import the catalog, the registry and the HTTP tools."""
from gateway_app.selectors import callable_chat_lanes, chat_lane_connection, thinks_offline, voice_lane_states
from registry_app import snapshot
from registry_app.lanes.failover import LaneFailure
from registry_app.snapshot import SnapshotLane
from scripts_app.analysis import analyze
from scripts_app.catalog import catalog, touchpoint
from speech_app.piper import piper_voices
from speech_app.streaming import BATCH_PROTOCOL, lane_protocol, protocol_module, protocols, streaming_target
from tools_app.models import HttpTool


def opening_touchpoint_problems(*, tenant, value):
    found = touchpoint(value)
    if found is not None and found.opens_call:
        return []
    openers = ", ".join(tp.id for tp in catalog().values() if tp.opens_call)
    what = "is no touchpoint of the catalog" if found is None else "does not open a call"
    return [f"'{value}' {what}. Send one that opens a call: {openers}."]


def greeting_problems(*, tenant, value):
    """A greeting is linted like every script (scripts_app's linter): its errors refuse
    it, with the linter's message; warnings are the admin's to show."""
    if not value:
        return []
    return [f"{finding['excerpt']!r}: {finding['message']}" for finding in analyze(value)["findings"]
            if finding["level"] == "error"]


def opening_touchpoint_choices(*, tenants):
    return [(tp.id, tp.id) for tp in catalog().values() if tp.opens_call]


def chat_lane_problems(*, tenant, value):
    current = snapshot.current()
    if current is None:
        return ["No registry is loaded, so no lane can be named: send null (the router's choice) or load a "
                "registry first (manage.py load_registry)."]
    lane = current.by_id.get(value)
    if lane is None or lane.capability != "chat":
        chat = ", ".join(sorted(lane.id for lane in current.by_capability.get("chat", ()))) or "none"
        return [f"'{value}' is no chat lane of the registry. Chat lanes: {chat}; or null for the router's choice."]
    return []


def voice_lane_problems(*, tenant, value):
    """A voice `<lane>:<voice>`: the lane must be a tts lane of the registry that lists the voice."""
    lane_id, _, voice = value.partition(":")
    current = snapshot.current()
    lane = current.by_id.get(lane_id) if current is not None else None
    if lane is None or lane.capability != "tts":
        tts = ", ".join(sorted(lane.id for lane in current.by_capability.get("tts", ()))) if current else ""
        return [f"'{lane_id}' is no tts lane of the registry. Tts lanes: {tts or 'none'}; or a bare voice name."]
    voices = [name for name in (lane.entry.get("params") or {}).get("voices") or () if isinstance(name, str)]
    if voice not in voices:
        return [f"Lane '{lane_id}' has no voice '{voice}'. Its voices: {', '.join(voices) or 'none'}."]
    return []


def transcriber_lane_problems(*, tenant, value):
    """The lane of an assistant's transcriber: an stt lane of the registry that streams."""
    current = snapshot.current()
    lane = current.by_id.get(value) if current is not None else None
    streaming = sorted(lane.id for lane in current.by_capability.get("stt", ())
                       if (lane.entry.get("params") or {}).get("protocol")) if current is not None else []
    if lane is None or lane.capability != "stt" or not (lane.entry.get("params") or {}).get("protocol"):
        return [f"'{value}' is no streaming stt lane of the registry. Streaming stt lanes: "
                f"{', '.join(streaming) or 'none'}; or null for this service's recognition."]
    return []


def realtime_lane_problems(*, tenant, value):
    """The lane of an assistant's realtime mode: a voice-agent lane of the registry whose
    protocol a module speaks (speech_app/providers: openai-realtime)."""
    current = snapshot.current()
    speaking = {name for name, module in protocols().items() if module.capability == "voice-agent"}
    lanes = [lane for lane in (current.by_capability.get("voice-agent", ()) if current is not None else ())
             if (lane.entry.get("params") or {}).get("protocol") in speaking]
    if value not in {lane.id for lane in lanes}:
        return [f"'{value}' is no voice-agent lane of the registry with a realtime protocol. Such lanes: "
                f"{', '.join(sorted(lane.id for lane in lanes)) or 'none'}."]
    return []


def chat_lane_choices(*, tenants):
    """The registry's chat lanes the gateway can call, for the assistant's dropdown (the
    router's choice first)."""
    modes = {"mock": "Offline-Regelwerk", "api": "API", "cli": "Programm"}
    return [("", "Automatisch (Router)")] + [(lane_id, f"{lane_id} ({modes.get(mode, mode)})")
                                             for lane_id, mode in callable_chat_lanes()]


def callable_speech_lanes(capability: str) -> list[SnapshotLane]:
    """The registry's tts (or stt) lanes that can be called now: a batch lane as the
    gateway plans it (gateway_app.selectors.voice_lane_states), a streaming lane (the
    voice agent's) when its endpoint and key are set."""
    current = snapshot.current()
    usable = {state["lane"] for state in voice_lane_states(capability) if state["usable"]}
    return [lane for lane in (current.by_capability.get(capability, ()) if current is not None else ())
            if lane.id in usable or _streaming_callable(lane)]


def _streaming_callable(lane: SnapshotLane) -> bool:
    """A streaming lane whose endpoint and key are set (speech_app.streaming.streaming_target)."""
    module = protocol_module(lane)
    if module is None or module.capability != lane.capability:
        return False
    try:
        streaming_target(lane, module)
    except LaneFailure:
        return False
    return True


def voice_choices(*, tenants: object) -> list[tuple[str, str]]:
    """The assistant's voice dropdown: the language's local default, the operator's Piper
    voices, and each voice of the registry's tts lanes that can be called now."""
    choices = [("", "Standardstimme der Sprache (lokal)")]
    choices += [(name, f"{name} (Piper, lokal)") for name in sorted(piper_voices())]
    for lane in callable_speech_lanes("tts"):
        streams = " – streamt" if lane_protocol(lane) != BATCH_PROTOCOL else ""
        choices += [(f"{lane.id}:{voice}", f"{voice} ({lane.id}{streams})")
                    for voice in (lane.entry.get("params") or {}).get("voices") or () if isinstance(voice, str)]
    return choices


def transcriber_lane_choices(*, tenants: object) -> list[tuple[str, str]]:
    """The transcriber dropdown: this service's recognition, or a streaming stt lane of
    the registry that can be called now."""
    return [("", "Eigene Spracherkennung des Dienstes")] + [
        (lane.id, f"{lane.id} ({lane.entry.get('name') or lane_protocol(lane)})") for lane in callable_speech_lanes("stt")
        if lane_protocol(lane) != BATCH_PROTOCOL]


def assistant_thinks_offline(assistant):
    return thinks_offline(lane_id=assistant.model_lane, language=assistant.language)


def assistant_connection(assistant):
    """How the assistant's chat lane stands (gateway_app's readiness: no call is made), in German."""
    state = chat_lane_connection(assistant.model_lane)
    if state is None:
        return "Keine Chat-Lane der Registry passt."
    modes = {"mock": "Offline-Regelwerk", "api": "API", "cli": "Programm"}
    text = f"{state['lane']} ({modes.get(state['mode'], state['mode'] or 'nicht aufrufbar')}): "
    text += "bereit" if state["usable"] else f"nicht nutzbar ({state.get('reason', 'unbekannt')})"
    if state["healthOk"] is not None:
        text += "; letzte Prüfung: " + ("erreichbar" if state["healthOk"] else "nicht erreichbar")
    return text


def http_tool_problems(*, tenant, value):
    known = set(HttpTool.objects.for_tenant(tenant).filter(pk__in=value).values_list("pk", flat=True))
    # Another tenant's tool answers like one that does not exist.
    return [f"No HTTP tool '{tool_id}' in this tenant (GET /v2/tools lists them)."
            for tool_id in value if tool_id not in known]


def http_tool_choices(*, tenants):
    tools = HttpTool.objects.filter(tenant__in=tenants).select_related("tenant").order_by("tenant__slug", "name")
    several = len({tenant.pk for tenant in tenants}) > 1
    return [(tool.pk, f"HTTP: {tool.name}" + (f" ({tool.tenant.slug})" if several else "")) for tool in tools]
