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
from dataclasses import dataclass

OPENING_TOUCHPOINT = "openingTouchpoint"
MODEL_LANE = "model.lane"
TRANSCRIBER_LANE = "transcriber.lane"  # the value: a lane id (a streaming stt lane of the registry)
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


def reference_choices(name, *, tenants):
    """[(value, label)] the admin may offer, or None when no app offers any."""
    reference = _references.get(name)
    if reference is None or reference.choices is None:
        return None
    return list(reference.choices(tenants=tenants))
