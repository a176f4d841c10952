"""The built-in tools, each declared once: its name, German label, what the model is told,
its JSON schema, the function that runs it, and the app that owns its effect.

The core cannot import the apps that act (calls_app writes calls, campaigns_app the
blocklist, knowledge_app searches): each of them declares its tools in a module of its
own and registers them in its `AppConfig.ready()` (`register_builtin_tool`), as
campaigns_app hands calls_app its answering-machine listener. Everything else is
derived from the registry: the names an assistant may be given
(console.assistants.validation), the admin's choices and their labels, the definitions
handed to the model and the dispatch of a call (tools_app.definitions and
tools_app.services.tool_run), the tools a campaign's call always offers (agent_app.mind),
and docs/api.md's table (tests/tools_app/test_builtin_tools.py checks it). How to add
one: docs/architecture.md, "Built-in tools".

A tool's `run(call)` gets the assistant, the call's id and the arguments already checked
against `parameters`; it returns the result's fields (`{"result": …}`, and `"action":
"transfer"` or `"end_call"` when the conversation must act on it). It refuses with
`ValidationFailed` (a tool error `invalid_arguments` naming the field) or `ToolRefused`
(its own code of console.tool_codes); anything else it raises is an `internal_error`,
logged. The conversation goes on after each.
"""
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.utils.functional import Promise

if TYPE_CHECKING:
    from console.assistants.models import Assistant


@dataclass(frozen=True)
class BuiltinCall:
    """One call of a built-in tool by the assistant's model, its arguments checked."""

    assistant: "Assistant"
    call_id: str
    arguments: Mapping[str, Any]
    # The caller's number of the call (E.164; "" for a web call or an erased number), told
    # by tools_app.tool_run so that an owner that may not read calls knows whose call it is.
    caller_e164: str = ""


class ToolRefused(Exception):
    """A built-in tool refused what it was asked: the tool error `code` (one of
    console.tool_codes) with `message`, told to the model."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _always(assistant: "Assistant") -> bool:
    return True


def _in_any_call(assistant: "Assistant", call_id: str) -> bool:
    return True


def _as_declared(parameters: dict[str, Any], assistant: "Assistant") -> dict[str, Any]:
    return parameters


@dataclass(frozen=True)
class BuiltinTool:
    name: str
    label: str | Promise  # the admin's label (German through the catalogue), naming the tool
    description: str  # what the model is told, German
    parameters: dict[str, Any]  # a JSON schema of an object (console.json_schemas checks the arguments)
    run: Callable[[BuiltinCall], dict[str, Any]]
    owner: str  # the app whose `run` has the effect (its AppConfig.ready() registers the tool)
    position: int  # where the tool stands in every list (the admin, the model's tools, the docs)
    # Whether the model is offered the tool by this assistant (transfer_call: only with targets).
    offered: Callable[["Assistant"], bool] = field(default=_always)
    # …and in this call, by its id (send_sms: only where an SMS could reach the caller, so
    # that nothing is promised that cannot be kept).
    offered_in_call: Callable[["Assistant", str], bool] = field(default=_in_any_call)
    # The parameters as this assistant's model is shown them (transfer_call: its targets as an enum);
    # the arguments are checked against `parameters`.
    shown: Callable[[dict[str, Any], "Assistant"], dict[str, Any]] = field(default=_as_declared)
    # Offered on every call of a campaign, whatever the assistant's tools (§ 7 UWG: an
    # objection is always taken, and the call can end).
    on_campaign_calls: bool = False
    # What a warm hand-over's summary says the assistant did when it ran in the call
    # (German, after "Bereits erledigt:"), e.g. "eine Rückrufbitte aufgenommen"; "": nothing.
    done: str = ""
    # Whether running it changes nothing (a search): a test call (agent_app.scenario_runs)
    # runs it for real; every other built-in tool acts in the test's sandbox.
    effect_free: bool = False


_tools: dict[str, BuiltinTool] = {}


def register_builtin_tool(tool: BuiltinTool) -> None:
    """Registers `tool` (from its owner's AppConfig.ready()). A second tool of the same
    name from another owner is a mistake of the code, refused at start-up."""
    known = _tools.get(tool.name)
    if known is not None and known.owner != tool.owner:
        raise ValueError(f"The built-in tool {tool.name} is declared by {known.owner} already.")
    _tools[tool.name] = tool
    ordered = sorted(_tools.values(), key=lambda each: (each.position, each.name))
    _tools.clear()
    _tools.update((each.name, each) for each in ordered)


def builtin_tools() -> list[BuiltinTool]:
    """Every registered built-in tool, in its position."""
    return list(_tools.values())


def builtin_tool(name: str) -> BuiltinTool | None:
    return _tools.get(name) if isinstance(name, str) else None


def builtin_tool_names() -> tuple[str, ...]:
    return tuple(_tools)


def is_builtin_tool(name: object) -> bool:
    return isinstance(name, str) and name in _tools


def campaign_call_tools() -> tuple[str, ...]:
    """The built-in tools every campaign call offers beyond its assistant's."""
    return tuple(tool.name for tool in _tools.values() if tool.on_campaign_calls)
