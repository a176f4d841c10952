"""An assistant's fields as the API names them, checked and turned into the model's
values: one place for the API (POST/PATCH /v2/assistants) and the admin's editor.

Every problem is reported at once, under the path of the value (`name`,
`transferTargets[0].e164`, `analysis.schema`, `model.temperature`), as the request
body reader names fields (docs/api.md, "Errors"). What the core does not own (the
touchpoint catalog, the registry's lanes, the tenant's HTTP tools and knowledge
documents) is checked by the app that owns it (console.assistants.references).
"""
import math
import re

from console.assistants import references
from console.assistants.builtin_tools import builtin_tool_names, is_builtin_tool
from console.assistants.models import DEFAULT_OPENING_TOUCHPOINT, MODES, PIPELINE, REALTIME
from console.errors import ValidationFailed
from console.json_schemas import schema_problems
from console.phone import InvalidPhoneNumber, to_e164

MAX_NAME = 200
MAX_DESCRIPTION = 2_000
MAX_INSTRUCTIONS = 20_000
MAX_GREETING = 1_000
MAX_TOOLS = 32
MAX_KNOWLEDGE = 200
MAX_TRANSFER_TARGETS = 20
MAX_TARGET_NAME = 100
MAX_SUCCESS_CRITERIA = 5_000
MAX_END_CALL_PHRASES = 20
MAX_PHRASE = 200
MAX_TEMPERATURE = 2
MAX_TOKENS = 32_768
SILENCE_TIMEOUT_RANGE = (2, 600)

LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,4})?$")
VOICE = re.compile(r"^[A-Za-z0-9_.+:-]{0,64}$")
HTTP_TOOL_ID = re.compile(r"^tl_[0-9a-z]{1,37}$")
DOCUMENT_ID = re.compile(r"^[a-z]{1,5}_[0-9A-Za-z]{1,40}$")

# The API's names of the fields, in the order of the representation.
API_FIELDS = ("name", "description", "language", "voice", "transcriber", "mode", "realtime", "instructions",
              "openingTouchpoint", "greeting", "tools", "knowledge", "model", "transferTargets", "analysis",
              "maxDurationSec", "silenceTimeoutSec", "endCallPhrases", "appointmentTypes")
# Deepgram's Nova-3 takes up to 100 key terms (speech_app/providers/deepgram_live.py).
MAX_KEYTERMS = 100
MODEL_KEYS = ("capability", "lane", "temperature", "maxTokens")
ANALYSIS_KEYS = ("summary", "schema", "successCriteria")


class _Problems(dict):
    def add(self, path, message):
        self.setdefault(path, []).append(message)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _text(problems, path, value, *, maximum, required=False):
    if value is None and required:
        problems.add(path, "This field is required.")
        return None
    if not isinstance(value, str):
        problems.add(path, "Send a string.")
        return None
    if "\x00" in value:
        problems.add(path, "NUL characters are not allowed.")
        return None
    if required and not value.strip():
        problems.add(path, "This field may not be blank.")
        return None
    if len(value) > maximum:
        problems.add(path, f"At most {maximum:,} characters are allowed (this has {len(value):,}).")
        return None
    return value


def _unknown_keys(problems, path, value, accepted):
    for key in sorted(set(value) - set(accepted)):
        problems.add(f"{path}.{key}", f"Unknown field. Accepted: {', '.join(accepted)}.")


def _seconds(problems, path, value, low, high, what):
    if value is None:
        return None
    if not _is_int(value) or not low <= value <= high:
        problems.add(path, f"Send a whole number of seconds from {low} to {high} ({what}), or null.")
        return None
    return value


def _tools(problems, tenant, value):
    if not isinstance(value, list):
        problems.add("tools", f"Send a list of tool names ({', '.join(builtin_tool_names())}) and HTTP tool ids "
                              "(tl_…).")
        return None
    if len(value) > MAX_TOOLS:
        problems.add("tools", f"At most {MAX_TOOLS} tools.")
        return None
    tools, http_ids = [], []
    for index, name in enumerate(value):
        if not isinstance(name, str) or not (is_builtin_tool(name) or HTTP_TOOL_ID.match(name)):
            problems.add(f"tools[{index}]", f"'{str(name)[:80]}' is no tool. Send one of the built-in tools "
                                            f"({', '.join(builtin_tool_names())}) or the id of one of the tenant's HTTP "
                                            "tools (tl_…, see GET /v2/tools).")
            continue
        if name not in tools:
            tools.append(name)
            if not is_builtin_tool(name):
                http_ids.append(name)
    if http_ids:
        for message in references.reference_problems(references.HTTP_TOOLS, tenant=tenant, value=http_ids):
            problems.add("tools", message)
    return tools


def _knowledge(problems, tenant, value):
    if value is None:
        return None  # every document of the tenant
    if not isinstance(value, list) or len(value) > MAX_KNOWLEDGE:
        problems.add("knowledge", f"Send a list of at most {MAX_KNOWLEDGE} knowledge document ids, or null for "
                                  "all of the tenant's documents.")
        return None
    ids = []
    for index, document_id in enumerate(value):
        if not isinstance(document_id, str) or not DOCUMENT_ID.match(document_id):
            problems.add(f"knowledge[{index}]", "Send the id of one of the tenant's knowledge documents.")
        elif document_id not in ids:
            ids.append(document_id)
    if ids:
        for message in references.reference_problems(references.KNOWLEDGE, tenant=tenant, value=ids):
            problems.add("knowledge", message)
    return ids


def _model(problems, tenant, value, current):
    """{capability, lane, temperature, maxTokens} merged into `current` (a PATCH
    changes the keys it names)."""
    if not isinstance(value, dict):
        problems.add("model", "Send an object: {\"capability\": \"chat\", \"lane\"?, \"temperature\"?, "
                              "\"maxTokens\"?}.")
        return None
    _unknown_keys(problems, "model", value, MODEL_KEYS)
    merged = dict(current)
    if "capability" in value and value["capability"] != "chat":
        problems.add("model.capability", "An assistant talks: the capability is 'chat'.")
    if "lane" in value:
        lane = value["lane"]
        if lane in (None, ""):
            merged["lane"] = ""
        elif not isinstance(lane, str) or len(lane) > 100:
            problems.add("model.lane", "Send the id of a chat lane of the registry (GET /v2/registry/models"
                                       "?capability=chat), or null for the router's choice.")
        else:
            for message in references.reference_problems(references.MODEL_LANE, tenant=tenant, value=lane):
                problems.add("model.lane", message)
            merged["lane"] = lane
    if "temperature" in value:
        temperature = value["temperature"]
        if temperature is None:
            merged["temperature"] = None
        elif isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
                or (isinstance(temperature, float) and not math.isfinite(temperature)) \
                or not 0 <= temperature <= MAX_TEMPERATURE:  # an int of 4,000 digits compares, never converts
            problems.add("model.temperature", f"Send a number from 0 to {MAX_TEMPERATURE}, or null for the lane's "
                                              "default.")
        else:
            # Two decimals are all a sampler tells apart.
            merged["temperature"] = round(float(temperature), 2)
    if "maxTokens" in value:
        tokens = value["maxTokens"]
        if tokens is None:
            merged["maxTokens"] = None
        elif not _is_int(tokens) or not 1 <= tokens <= MAX_TOKENS:
            problems.add("model.maxTokens", f"Send a whole number from 1 to {MAX_TOKENS}, or null for the "
                                            "gateway's default.")
        else:
            merged["maxTokens"] = tokens
    return merged


def _transcriber(problems, tenant, value):
    """{"lane"?, "keyterms"?} (null or {}: none, the local recogniser); the lane is checked
    by the registry's owner (a streaming stt lane), the key terms here. Key terms without
    a lane are the local recogniser's vocabulary (Whisper's prompt), as they are beside one."""
    if value is None or value == {}:
        return {}
    lane = value.get("lane") if isinstance(value, dict) else None
    if not isinstance(value, dict) or ("lane" in value and (not isinstance(lane, str) or not lane)):
        problems.add("transcriber", "Send {\"lane\"?: an stt lane of the registry, \"keyterms\"?: [terms]}, or null.")
        return None
    _unknown_keys(problems, "transcriber", value, ("lane", "keyterms"))
    if lane:
        for message in references.reference_problems(references.TRANSCRIBER_LANE, tenant=tenant, value=lane):
            problems.add("transcriber.lane", message)
    keyterms = value.get("keyterms", [])
    if (not isinstance(keyterms, list) or len(keyterms) > MAX_KEYTERMS
            or not all(isinstance(term, str) and 0 < len(term.strip()) <= 100 for term in keyterms)):
        problems.add("transcriber.keyterms", f"Send at most {MAX_KEYTERMS} terms of 1–100 characters.")
        return None
    terms = list(dict.fromkeys(term.strip() for term in keyterms))
    if not lane:
        return {"keyterms": terms} if terms else {}
    return {"lane": lane, "keyterms": terms}


def _mode(problems, tenant, data, instance):
    """`mode` ("pipeline", "realtime"; null: "pipeline") and `realtime` ({"lane": a
    voice-agent lane}; null or {}: none), as model values; realtime mode needs a lane
    (sent now or kept from before)."""
    values = {}
    if "mode" in data:
        mode = PIPELINE if data["mode"] is None else data["mode"]
        if mode not in MODES:
            problems.add("mode", f"Send one of {', '.join(MODES)}.")
        else:
            values["mode"] = mode
    if "realtime" in data:
        value = {} if data["realtime"] is None else data["realtime"]
        if not isinstance(value, dict) or (value and not (isinstance(value.get("lane"), str) and value["lane"])):
            problems.add("realtime", "Send {\"lane\": a voice-agent lane of the registry}, or null.")
        else:
            _unknown_keys(problems, "realtime", value, ("lane",))
            if value:
                for message in references.reference_problems(references.REALTIME_LANE, tenant=tenant,
                                                             value=value["lane"]):
                    problems.add("realtime.lane", message)
            values["realtime"] = {"lane": value["lane"]} if value else {}
    mode = values.get("mode", instance.mode if instance is not None else PIPELINE)
    realtime = values.get("realtime", instance.realtime if instance is not None else {})
    if mode == REALTIME and not (realtime or {}).get("lane") and "realtime" not in problems:
        problems.add("realtime", "Realtime mode needs a voice-agent lane: send \"realtime\": {\"lane\": …}.")
    return values


def _transfer_targets(problems, value):
    if not isinstance(value, list):
        problems.add("transferTargets", "Send a list of {\"name\", \"e164\"} objects.")
        return None
    if len(value) > MAX_TRANSFER_TARGETS:
        problems.add("transferTargets", f"At most {MAX_TRANSFER_TARGETS} transfer targets.")
        return None
    targets, seen = [], set()
    for index, target in enumerate(value):
        path = f"transferTargets[{index}]"
        if not isinstance(target, dict):
            problems.add(path, "Send an object {\"name\": \"Zentrale\", \"e164\": \"+4930901820\"}.")
            continue
        _unknown_keys(problems, path, target, ("name", "e164", "warm"))
        warm = target.get("warm", False)
        if not isinstance(warm, bool):
            problems.add(f"{path}.warm", "Send true (a warm hand-over: the person hears a summary first) or false.")
        name = _text(problems, f"{path}.name", target.get("name"), maximum=MAX_TARGET_NAME, required=True)
        raw = target.get("e164")
        e164 = None
        if not isinstance(raw, str):
            problems.add(f"{path}.e164", "Send the number as a string, e.g. \"+49 30 901820\".")
        else:
            try:
                e164 = to_e164(raw)
            except InvalidPhoneNumber as exc:
                problems.add(f"{path}.e164", str(exc))
        if e164 is not None and e164 in seen:
            problems.add(f"{path}.e164", "This number is listed twice.")
        elif name is not None and e164 is not None:
            seen.add(e164)
            targets.append({"name": name.strip(), "e164": e164, **({"warm": True} if warm is True else {})})
    return targets


def _analysis(problems, value, current):
    if not isinstance(value, dict):
        problems.add("analysis", "Send an object: {\"summary\"?, \"schema\"?, \"successCriteria\"?}.")
        return None
    _unknown_keys(problems, "analysis", value, ANALYSIS_KEYS)
    merged = dict(current)
    if "summary" in value:
        if not isinstance(value["summary"], bool):
            problems.add("analysis.summary", "Send true or false.")
        else:
            merged["summary"] = value["summary"]
    if "schema" in value:
        schema = value["schema"]
        if schema is None:
            merged["schema"] = None
        else:
            found = schema_problems(schema, root_type="object")
            for message in found:
                problems.add("analysis.schema", message)
            if not found:
                merged["schema"] = schema
    if "successCriteria" in value:
        criteria = value["successCriteria"]
        criteria = "" if criteria is None else _text(problems, "analysis.successCriteria", criteria,
                                                     maximum=MAX_SUCCESS_CRITERIA)
        if criteria is not None:
            merged["successCriteria"] = criteria
    return merged


def _phrases(problems, value):
    if not isinstance(value, list) or len(value) > MAX_END_CALL_PHRASES:
        problems.add("endCallPhrases", f"Send a list of at most {MAX_END_CALL_PHRASES} phrases.")
        return None
    phrases = []
    for index, phrase in enumerate(value):
        text = _text(problems, f"endCallPhrases[{index}]", phrase, maximum=MAX_PHRASE, required=True)
        if text is not None and text.strip() not in phrases:
            phrases.append(text.strip())
    return phrases


def current_model(assistant):
    return {"capability": "chat", "lane": assistant.model_lane if assistant else "",
            "temperature": assistant.model_temperature if assistant else None,
            "maxTokens": assistant.model_max_tokens if assistant else None}


def current_analysis(assistant):
    return {"summary": assistant.analysis_summary if assistant else True,
            "schema": assistant.analysis_schema if assistant else None,
            "successCriteria": assistant.analysis_success_criteria if assistant else ""}


def assistant_values(*, tenant, data, instance=None):
    """The model's values for the API fields in `data` (a dict), checked: a create
    (`instance` None) needs `name`; a change (`instance`) changes only the fields it
    names, and within `model` and `analysis` only the keys it names. Raises
    ValidationFailed naming every problem by its path."""
    problems = _Problems()
    values = {}
    _unknown_keys_top(problems, data)
    if instance is None and "name" not in data:
        problems.add("name", "This field is required.")
    if "name" in data:
        name = _text(problems, "name", data["name"], maximum=MAX_NAME, required=True)
        if name is not None:
            values["name"] = name.strip()
    if "description" in data:
        description = _text(problems, "description", "" if data["description"] is None else data["description"],
                            maximum=MAX_DESCRIPTION)
        if description is not None:
            values["description"] = description
    if "language" in data:
        language = data["language"]
        if not isinstance(language, str) or not LANGUAGE.match(language):
            problems.add("language", "Send a language code such as de, en or de-AT.")
        else:
            values["language"] = language
    if "voice" in data:
        voice = "" if data["voice"] is None else data["voice"]
        if not isinstance(voice, str) or not VOICE.match(voice):
            problems.add("voice", "Send a voice name (letters, digits and _.+:-, at most 64; `<lane>:<voice>` "
                                  "for a voice of a registry tts lane), or \"\" for the engine's default.")
        elif ":" in voice:  # `<lane>:<voice>`: a tts lane of the registry and one of its voices
            found = references.reference_problems(references.VOICE_LANE, tenant=tenant, value=voice)
            for message in found:
                problems.add("voice", message)
            if not found:
                values["voice"] = voice
        else:
            values["voice"] = voice
    if "transcriber" in data:
        transcriber = _transcriber(problems, tenant, data["transcriber"])
        if transcriber is not None:
            values["transcriber"] = transcriber
    if "mode" in data or "realtime" in data:
        values.update(_mode(problems, tenant, data, instance))
    if "instructions" in data:
        instructions = "" if data["instructions"] is None else data["instructions"]
        instructions = _text(problems, "instructions", instructions, maximum=MAX_INSTRUCTIONS)
        if instructions is not None:
            values["instructions"] = instructions
    if "openingTouchpoint" in data:
        touchpoint = data["openingTouchpoint"]
        if touchpoint is None:
            touchpoint = DEFAULT_OPENING_TOUCHPOINT
        if not isinstance(touchpoint, str) or len(touchpoint) > 64:
            problems.add("openingTouchpoint", "Send the id of a touchpoint that opens a call, e.g. inbound.greeting.")
        else:
            found = references.reference_problems(references.OPENING_TOUCHPOINT, tenant=tenant, value=touchpoint)
            for message in found:
                problems.add("openingTouchpoint", message)
            if not found:
                values["opening_touchpoint"] = touchpoint
    if "greeting" in data:
        greeting = _text(problems, "greeting", "" if data["greeting"] is None else data["greeting"],
                         maximum=MAX_GREETING)
        if greeting is not None:
            found = references.reference_problems(references.GREETING, tenant=tenant, value=greeting.strip())
            for message in found:
                problems.add("greeting", message)
            if not found:
                values["greeting"] = greeting.strip()
    if "tools" in data:
        tools = _tools(problems, tenant, data["tools"])
        if tools is not None:
            values["tools"] = tools
    if "knowledge" in data:
        values["knowledge"] = _knowledge(problems, tenant, data["knowledge"])
    if "model" in data:
        model = _model(problems, tenant, {} if data["model"] is None else data["model"], current_model(instance))
        if model is not None:
            values.update(model_lane=model["lane"], model_temperature=model["temperature"],
                          model_max_tokens=model["maxTokens"])
    if "transferTargets" in data:
        targets = _transfer_targets(problems, data["transferTargets"])
        if targets is not None:
            values["transfer_targets"] = targets
    if "analysis" in data:
        analysis = _analysis(problems, {} if data["analysis"] is None else data["analysis"],
                             current_analysis(instance))
        if analysis is not None:
            values.update(analysis_summary=analysis["summary"], analysis_schema=analysis["schema"],
                          analysis_success_criteria=analysis["successCriteria"])
    if "maxDurationSec" in data:
        longest = tenant.max_call_minutes * 60
        values["max_duration_sec"] = _seconds(problems, "maxDurationSec", data["maxDurationSec"], 1, longest,
                                              "at most the tenant's maximum call length")
    if "silenceTimeoutSec" in data:
        values["silence_timeout_sec"] = _seconds(problems, "silenceTimeoutSec", data["silenceTimeoutSec"],
                                                 *SILENCE_TIMEOUT_RANGE, "the silence after which the call ends")
    if "endCallPhrases" in data:
        phrases = _phrases(problems, data["endCallPhrases"])
        if phrases is not None:
            values["end_call_phrases"] = phrases
    if "appointmentTypes" in data:
        types, found = references.field_clean(references.APPOINTMENT_TYPES, tenant=tenant,
                                              value=data["appointmentTypes"])
        for path, messages in found.items():
            for message in messages:
                problems.add(path, message)
        if not found:
            values["appointment_types"] = types
    if problems:
        raise ValidationFailed(details=dict(problems))
    return values


def _unknown_keys_top(problems, data):
    for key in sorted(set(data) - set(API_FIELDS)):
        problems.add(key, f"Unknown field. Accepted: {', '.join(API_FIELDS)}.")
