"""What an assistant names that the core does not own, checked by the app that owns it.

An assistant (core) names a touchpoint of the script catalog (scripts_app), a lane of
the registry (registry_app), the tenant's HTTP tools (tools_app) and its knowledge
documents (knowledge_app). The core imports none of them (docs/architecture.md), so
each check is registered here by an app above it, in its `AppConfig.ready()` — as
calls_app offers `register_erased_caller_lookup` to privacy_app: tools_app registers
the touchpoint, lane, voice lane and HTTP tool checks, knowledge_app the documents'. A reference
nobody registered a check for is taken as it is (its form is still checked by
console.assistants.validation).

A check is `check(*, tenant, value) -> [messages]` ([] when the value is fine); the
optional `choices(*, tenants) -> [(value, label)]` offers the admin's editor what may
be picked (tenants: the tenants the editing user may see).
"""
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

OPENING_TOUCHPOINT = "openingTouchpoint"
GREETING = "greeting"  # the value: the greeting's text (linted by scripts_app's linter)
MODEL_LANE = "model.lane"
TRANSCRIBER_LANE = "transcriber.lane"  # the value: a lane id (a streaming stt lane of the registry)
REALTIME_LANE = "realtime.lane"  # the value: a lane id (a voice-agent lane of the registry)
VOICE_LANE = "voice"  # the value: a voice named `<lane>:<voice>` (a bare voice is not checked)
HTTP_TOOLS = "tools"  # the value: the tool ids of the list (built-in names left out)
KNOWLEDGE = "knowledge"  # the value: the list of document ids (never None, "all")


@dataclass(frozen=True)
class Reference:
    check: object
    choices: object = None


_references = {}


def register_reference(name, *, check, choices=None):
    _references[name] = Reference(check=check, choices=choices)


def reference_problems(name, *, tenant, value):
    reference = _references.get(name)
    return list(reference.check(tenant=tenant, value=value)) if reference is not None else []


# What the caller hears first of an assistant (the disclosure, then its greeting or
# opening script), as the admin shows it: told by agent_app, which speaks it.
_first_heard: list = []


def register_first_heard(describe):
    """`describe(assistant) -> str`: the text a caller of `assistant` hears first."""
    _first_heard[:] = [describe]


def first_heard(assistant):
    """What a caller of `assistant` hears first, or "" where no app tells it."""
    return _first_heard[0](assistant) if _first_heard else ""


# Whether an assistant answers by the offline rule set (no language model): told by
# gateway_app's routing through tools_app, shown as the admin's banner.
_offline: list = []


def register_offline_check(check, *, connection=None):
    """`check(assistant) -> bool`: the assistant's conversations are answered by the
    offline rules; `connection(assistant) -> str`: how its chat lane stands."""
    _offline[:] = [check, connection]


def thinks_offline(assistant):
    return bool(_offline) and _offline[0](assistant)


def lane_connection(assistant):
    """How the assistant's chat lane stands ("" where no app tells it)."""
    return _offline[1](assistant) if _offline and _offline[1] else ""


# The admin's "Verbindung prüfen": each lane the assistant names, called once (tools_app,
# which may call the gateway and speech).
_connection_test: list[Callable[..., list[tuple[bool, str]]]] = []


def register_connection_test(test: Callable[..., list[tuple[bool, str]]]) -> None:
    """`test(assistant) -> [(ok, German text)]`, one per lane it called."""
    _connection_test[:] = [test]


def connection_test(assistant: Any) -> list[tuple[bool, str]]:
    """The outcome of calling the assistant's lanes ([] where no app tells it)."""
    return _connection_test[0](assistant) if _connection_test else []


def reference_choices(name, *, tenants):
    """[(value, label)] the admin may offer, or None when no app offers any."""
    reference = _references.get(name)
    if reference is None or reference.choices is None:
        return None
    return list(reference.choices(tenants=tenants))


# What a published version records beside the assistant's own fields, from the apps
# that own it (console.assistants.selectors.assistant_snapshot): tools_app records the
# definitions of the HTTP tools the assistant names, so a version keeps the tools as
# they were when it was published. `take(*, assistant) -> JSON`.
_snapshot_parts: dict[str, Callable[..., Any]] = {}


def register_snapshot_part(name: str, *, take: Callable[..., Any]) -> None:
    _snapshot_parts[name] = take


def snapshot_parts(*, assistant: Any) -> dict[str, Any]:
    return {name: take(assistant=assistant) for name, take in sorted(_snapshot_parts.items())}
