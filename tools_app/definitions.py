"""The tools an assistant offers its language model, in the OpenAI tools format
(`{"type": "function", "function": {"name", "description", "parameters"}}`), which the
Chat Completions wire format of the gateway's lanes takes as `tools`.

Built-in tools are declared once each by the app that owns their effect
(console.assistants.builtin_tools: calls_app's callback, transfer and end, campaigns_app's
objection, knowledge_app's look-up), dispatched by tools_app.services.tool_run. The
tenant's HTTP tools are defined by the tenant (name, description, parameters).
Nothing here depends on the conversation core (agent_app): it hands
`tool_definitions(assistant=…)` to the model and each call back to `tool_run`.
"""

from console.assistants.builtin_tools import builtin_tool, is_builtin_tool
from tools_app.models import HttpTool


def _function(name, description, parameters):
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def builtin_definition(tool, *, assistant):
    """The definition of a built-in tool as `assistant`'s model is shown it (its
    parameters through the tool's `shown`: transfer_call's targets as an enum)."""
    return _function(tool.name, tool.description, tool.shown(tool.parameters, assistant))


def enabled_tools(*, assistant, also=()):
    """The assistant's tools (names and HTTP tool ids), then the built-in ones of `also`
    it lacks."""
    tools = list(assistant.tools or [])
    return tools + [name for name in also if is_builtin_tool(name) and name not in tools]


SNAPSHOT_PART = "http_tools"
SNAPSHOT_FIELDS = ("name", "description", "parameters")  # what the model is shown of a tool


def http_tools_of(assistant):
    """The assistant's HTTP tools of its tenant, in the order of its `tools` (one query).
    For a published version (console.assistants.selectors.assistant_as_of) each tool as
    the version recorded it — its name, description and parameters, what the model is
    shown and its arguments are checked against — with the tool's live address and
    secret (unsaved copies); a tool deleted since is left out."""
    ids = [name for name in assistant.tools or [] if not is_builtin_tool(name)]
    if not ids:
        return []
    found = {tool.pk: tool for tool in HttpTool.objects.for_tenant(assistant.tenant_id).filter(pk__in=ids)}
    recorded = (assistant.snapshot_parts or {}).get(SNAPSHOT_PART) or {}
    for tool_id, definition in recorded.items():
        if tool_id in found:
            for name in SNAPSHOT_FIELDS:
                setattr(found[tool_id], name, definition[name])
    return [found[tool_id] for tool_id in ids if tool_id in found]


def http_tools_recorded(*, assistant):
    """What a published version records of the assistant's HTTP tools
    (console.assistants.references.register_snapshot_part): {id: {name, description,
    parameters}}."""
    return {tool.pk: {name: getattr(tool, name) for name in SNAPSHOT_FIELDS} for tool in http_tools_of(assistant)}


def tool_definitions(*, assistant, also=(), call_id=""):
    """What the assistant's model may call, in the OpenAI tools format: its built-in
    tools (those the tool's `offered` allows: `transfer_call` only with transfer
    targets; in the call `call_id`, its `offered_in_call` too: `send_sms` only where an
    SMS can reach the caller) and its HTTP tools; `also`: built-in tools this call offers
    whatever the assistant's (a campaign call always takes an objection: `opt_out`, `end_call`)."""
    definitions = []
    for name in enabled_tools(assistant=assistant, also=also):
        tool = builtin_tool(name)
        if tool is not None and tool.offered(assistant) and (not call_id or tool.offered_in_call(assistant, call_id)):
            definitions.append(builtin_definition(tool, assistant=assistant))
    definitions += [_function(tool.name, tool.description, tool.parameters) for tool in http_tools_of(assistant)]
    return definitions
