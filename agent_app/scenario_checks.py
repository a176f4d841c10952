"""A scenario's shape and its expectations (docs/api.md, "Test calls"): what the body
may say, and each expectation's check against what a run heard and saw.

Every expectation has a `type` (EXPECTATION_TYPES) and is checked per turn (inside a
turn: against that turn's reply) or at the end (against the whole call). Patterns are
RE2 (console.json_schemas), never Python's backtracking engine on a tenant's text.
Deterministic checks only; `judge` (a chat lane reads a German rubric) is marked as not
deterministic in the result."""
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from console.errors import ValidationFailed
from console.json_schemas import regex_problem, regex_search
from console.phone import InvalidPhoneNumber, to_e164

MAX_TEXT = 2_000
MAX_NAME = 200
MAX_STUB_BYTES = 20_000
DTMF_KEYS = frozenset("0123456789*#ABCD")
# The types, and which of their fields each needs (one of the tuple's) or allows.
TEXT_FIELDS = ("text", "pattern", "words")
EXPECTATION_TYPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "said": (TEXT_FIELDS, ()),
    "not_said": (TEXT_FIELDS, ()),
    "tool_called": (("tool",), ("arguments",)),
    "transferred": ((), ("to",)),
    "callback_created": ((), ()),
    "analysis_field": (("field",), ()),
    "ended": ((), ()),
    "first_reply_within": (("ms",), ()),
    "judge": (("rubric",), ()),
}
END_ONLY = ("analysis_field", "judge")  # they read the whole call
VARIABLES = ("callerNumber",)


def _fail(where: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"{where}: {message}", details={where.split("[")[0].split(".")[0]: [f"{where}: {message}"]})


def _text(value: object, where: str, *, limit: int = MAX_TEXT, required: bool = True) -> str:
    if not isinstance(value, str) or (required and not value.strip()):
        raise _fail(where, "must be a non-empty string.")
    if len(value) > limit or "\x00" in value:
        raise _fail(where, f"at most {limit} characters, no NUL.")
    return value.strip()


def expectation_checked(value: object, where: str, *, in_turn: bool) -> dict[str, Any]:
    """One expectation as kept, or ValidationFailed naming `where` and why."""
    if not isinstance(value, dict):
        raise _fail(where, "an expectation is an object with a type.")
    kind = value.get("type")
    if kind not in EXPECTATION_TYPES:
        raise _fail(where, f"type must be one of {', '.join(EXPECTATION_TYPES)}.")
    needed, allowed = EXPECTATION_TYPES[kind]
    known = {"type", *needed, *allowed}
    unknown = sorted(set(value) - known)
    if unknown:
        raise _fail(where, f"unknown field(s) {', '.join(map(str, unknown))[:200]} for type {kind}.")
    if needed and not any(name in value for name in needed):
        raise _fail(where, f"type {kind} needs {' or '.join(needed)}.")
    if kind in END_ONLY and in_turn:
        raise _fail(where, f"type {kind} is checked at the end of the call (the scenario's expectations).")
    out: dict[str, Any] = {"type": kind}
    for name in (*needed, *allowed):
        if name not in value:
            continue
        item = value[name]
        if name == "words":
            if not isinstance(item, list) or not item or len(item) > 20:
                raise _fail(where, "words is a list of 1 to 20 strings.")
            out[name] = [_text(word, f"{where}.words", limit=200) for word in item]
        elif name == "pattern":
            out[name] = _text(item, f"{where}.pattern", limit=500)
            problem = regex_problem(out[name])
            if problem:
                raise _fail(where, f"pattern is no regular expression RE2 can use ({problem[:200]}).")
        elif name == "ms":
            if not isinstance(item, int) or isinstance(item, bool) or not 1 <= item <= 600_000:
                raise _fail(where, "ms is a whole number of milliseconds from 1 to 600000.")
            out[name] = item
        elif name == "arguments":
            if not isinstance(item, dict) or len(item) > 20:
                raise _fail(where, "arguments is an object of at most 20 values to match.")
            out[name] = {_text(key, f"{where}.arguments", limit=64): _argument(v, f"{where}.arguments.{key}")
                         for key, v in item.items()}
        else:
            out[name] = _text(item, f"{where}.{name}", limit=MAX_TEXT if name == "rubric" else 200)
    return out


def _argument(value: object, where: str) -> object:
    if isinstance(value, str):
        return _text(value, where, limit=500, required=False)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    raise _fail(where, "an argument to match is a string, number, boolean or null.")


def _expectations(value: object, where: str, *, in_turn: bool) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise _fail(where, "a list of expectations.")
    if len(value) > settings.SCENARIO_MAX_EXPECTATIONS:
        raise _fail(where, f"at most {settings.SCENARIO_MAX_EXPECTATIONS} expectations (SCENARIO_MAX_EXPECTATIONS).")
    return [expectation_checked(item, f"{where}[{i}]", in_turn=in_turn) for i, item in enumerate(value)]


def _turn(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, 'a turn is an object: {"text": "…"} (optionally "dtmf", "expectations").')
    unknown = sorted(set(value) - {"text", "dtmf", "expectations"})
    if unknown:
        raise _fail(where, f"unknown field(s) {', '.join(map(str, unknown))[:200]}.")
    turn: dict[str, Any] = {"text": _text(value.get("text", ""), f"{where}.text", required="dtmf" not in value)}
    if "dtmf" in value:
        dtmf = value["dtmf"]
        if not isinstance(dtmf, str) or not dtmf or len(dtmf) > 20 or set(dtmf) - DTMF_KEYS:
            raise _fail(where, "dtmf is 1 to 20 keys of 0-9, *, #, A-D.")
        turn["dtmf"] = dtmf
    turn["expectations"] = _expectations(value.get("expectations", []), f"{where}.expectations", in_turn=True)
    return turn


def scenario_fields(data: Mapping[str, Any], *, partial: bool = False) -> dict[str, Any]:
    """The model's fields from an API body (camelCase names), checked; ValidationFailed
    names the field. `partial`: a PATCH (only the fields it names)."""
    if not isinstance(data, Mapping):
        raise ValidationFailed("The body must be a JSON object.")
    fields = {"name", "turns", "variables", "expectations", "toolStubs", "realTools", "persona"}
    unknown = sorted(set(data) - fields)
    if unknown:
        raise ValidationFailed(f"Unknown field(s): {', '.join(map(str, unknown))[:300]}. Accepted: "
                               f"{', '.join(sorted(fields))}.", details={str(n)[:64]: ["Unknown field."] for n in unknown[:20]})
    if not partial and "name" not in data:
        raise ValidationFailed.field("name", "This field is required.")
    if not partial and "turns" not in data and not data.get("persona"):
        raise ValidationFailed.field("turns", "This field is required (or a persona that plays the caller).")
    out: dict[str, Any] = {}
    if "name" in data:
        out["name"] = _text(data["name"], "name", limit=MAX_NAME)
    if "turns" in data:
        turns = data["turns"]
        if not isinstance(turns, list) or not turns:
            raise _fail("turns", "a list of at least one turn of the caller.")
        if len(turns) > settings.SCENARIO_MAX_TURNS:
            raise _fail("turns", f"at most {settings.SCENARIO_MAX_TURNS} turns (SCENARIO_MAX_TURNS).")
        out["turns"] = [_turn(turn, f"turns[{i}]") for i, turn in enumerate(turns)]
    if "expectations" in data:
        out["expectations"] = _expectations(data["expectations"], "expectations", in_turn=False)
    if "variables" in data:
        out["variables"] = _variables(data["variables"])
    if "toolStubs" in data:
        out["tool_stubs"] = _stubs(data["toolStubs"])
    if "persona" in data:
        out["persona"] = _persona(data["persona"])
    if "realTools" in data:
        if not isinstance(data["realTools"], bool):
            raise _fail("realTools", "true or false.")
        out["real_tools"] = data["realTools"]
    return out


def _persona(value: object) -> dict[str, Any] | None:
    """A simulated caller: {"description", "maxTurns"?} (default 6, at most SCENARIO_MAX_TURNS); null: none."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"description", "maxTurns"}:
        raise _fail("persona", 'an object {"description": …, "maxTurns"?: n} or null.')
    turns = value.get("maxTurns", 6)
    if not isinstance(turns, int) or isinstance(turns, bool) or not 1 <= turns <= settings.SCENARIO_MAX_TURNS:
        raise _fail("persona", f"maxTurns is a whole number from 1 to {settings.SCENARIO_MAX_TURNS} (SCENARIO_MAX_TURNS).")
    return {"description": _text(value.get("description"), "persona.description"), "maxTurns": turns}


def _variables(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _fail("variables", f"an object of {', '.join(VARIABLES)}.")
    unknown = sorted(set(value) - set(VARIABLES))
    if unknown:
        raise _fail("variables", f"unknown variable(s) {', '.join(map(str, unknown))[:200]}; known: "
                    f"{', '.join(VARIABLES)}.")
    out = {}
    if "callerNumber" in value:
        try:
            out["callerNumber"] = to_e164(_text(value["callerNumber"], "variables.callerNumber", limit=40))
        except InvalidPhoneNumber:
            raise _fail("variables.callerNumber", "a phone number (E.164 or German).") from None
    return out


def _stubs(value: object) -> dict[str, Any]:
    import json

    if not isinstance(value, dict) or len(value) > 50:
        raise _fail("toolStubs", "an object of at most 50 tools' names and the JSON answer each gives.")
    for name in value:
        _text(name, "toolStubs", limit=64)
    if len(json.dumps(value, ensure_ascii=False)) > MAX_STUB_BYTES:
        raise _fail("toolStubs", f"at most {MAX_STUB_BYTES} bytes of JSON.")
    return dict(value)


# --- Checking a played scenario ------------------------------------------------------------

@dataclass
class Turn:
    """One of the caller's turns as played: what was said and heard, the agent's reply."""

    said: str
    heard: str
    reply: str = ""
    tools: list[dict[str, Any]] = field(default_factory=list)  # {"tool", "arguments", "result", "sandbox"}
    latency_ms: int = 0
    action: str = ""


@dataclass
class Played:
    opening: str
    turns: list[Turn]
    analysis: Callable[[], dict[str, Any]] | None = None  # the analysis' structured data, made when asked
    judge: Callable[[str], tuple[bool, str]] | None = None  # (verdict, why) of a rubric


def _agent_text(played: Played, turns: list[Turn], *, whole: bool) -> str:
    lines = ([played.opening] if whole else []) + [turn.reply for turn in turns]
    return " ".join(line for line in lines if line)


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def _said(expectation: dict[str, Any], text: str) -> tuple[bool, str]:
    """Whether the text holds what the expectation names, and how it is named."""
    if "pattern" in expectation:
        return regex_search(expectation["pattern"], text), f"/{expectation['pattern']}/"
    words = expectation.get("words") or [expectation["text"]]
    found = _norm(text)
    return all(_norm(word) in found for word in words), " ".join(f"„{word}“" for word in words)


def _matches(wanted: dict[str, Any], arguments: object) -> bool:
    if not isinstance(arguments, dict):
        return not wanted
    for key, value in wanted.items():
        got = arguments.get(key)
        if isinstance(value, str) and isinstance(got, str):
            if _norm(value) not in _norm(got):
                return False
        elif got != value:
            return False
    return True


def expectation_met(expectation: dict[str, Any], played: Played, turns: list[Turn], *,
                    whole: bool) -> tuple[bool, str]:
    """(met, why not — German, "" when met) of one expectation over `turns` (one turn, or
    every turn when `whole`)."""
    kind = expectation["type"]
    tools = [call for turn in turns for call in turn.tools]
    if kind in ("said", "not_said"):
        text = _agent_text(played, turns, whole=whole)
        found, named = _said(expectation, text)
        if kind == "said":
            return found, "" if found else f"Die Assistenz hat {named} nicht gesagt."
        return not found, "" if not found else f"Die Assistenz hat {named} gesagt."
    if kind == "tool_called":
        calls = [call for call in tools if call["tool"] == expectation["tool"]]
        if not calls:
            return False, f"Das Werkzeug {expectation['tool']} wurde nicht aufgerufen."
        wanted = expectation.get("arguments") or {}
        if not any(_matches(wanted, call["arguments"]) for call in calls):
            return False, (f"{expectation['tool']} wurde aufgerufen, aber nicht mit den erwarteten Argumenten "
                           f"(aufgerufen mit {calls[-1]['arguments']!r:.300}).")
        return True, ""
    if kind == "transferred":
        transfers = [call["result"].get("result") or {} for call in tools
                     if call["tool"] == "transfer_call" and call["result"].get("ok")]
        if not transfers:
            return False, "Der Anruf wurde nicht weitergeleitet."
        to = expectation.get("to")
        if to and not any(_target_is(target, to) for target in transfers):
            names = ", ".join(str(t.get("name")) for t in transfers)
            return False, f"Weitergeleitet an {names}, nicht an {to}."
        return True, ""
    if kind == "callback_created":
        made = any(call["tool"] == "create_callback" and call["result"].get("ok") for call in tools)
        return made, "" if made else "Es wurde kein Rückruf angelegt."
    if kind == "ended":
        ended = any(turn.action == "end_call" for turn in turns)
        return ended, "" if ended else "Die Assistenz hat das Gespräch nicht beendet."
    if kind == "first_reply_within":
        turn = turns[0] if turns else None
        if turn is None or turn.latency_ms > expectation["ms"]:
            took = f"{turn.latency_ms} ms" if turn else "keine Antwort"
            return False, f"Die erste Antwort kam nicht innerhalb von {expectation['ms']} ms ({took})."
        return True, ""
    if kind == "analysis_field":
        data = played.analysis() if played.analysis is not None else {}
        value = (data or {}).get(expectation["field"])
        has = value not in (None, "", [], {})
        return has, "" if has else f"Die Analyse hat keinen Wert für {expectation['field']}."
    if kind == "judge":
        if played.judge is None:
            return False, "Kein Prüfer verfügbar."
        verdict, why = played.judge(expectation["rubric"])
        return verdict, "" if verdict else f"Der Prüfer (nicht deterministisch): {why}"
    raise AssertionError(kind)  # EXPECTATION_TYPES names every kind


def _target_is(target: dict[str, Any], to: str) -> bool:
    if _norm(str(target.get("name", ""))) == _norm(to):
        return True
    try:
        return target.get("e164") == to_e164(to)
    except InvalidPhoneNumber:
        return False
