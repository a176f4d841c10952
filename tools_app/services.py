"""The tenant's HTTP tools (create, change, delete, rotate the secret), a call of one
(`tool_http_call`), and the one entry point of a model's tool call (`tool_run`).

A tool call never raises for what the tool, the network or the model did wrong: the
answer is a result `{"ok": true, "tool", "result", "action"?}` or a tool error
`{"ok": false, "tool", "error": code, "message"}`, which the conversation gives back
to the model and goes on (docs/api.md, "HTTP tools").
"""
import json
import logging
import re
import time
from collections.abc import Collection, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from console import outbound
from console import tool_codes as codes
from console.assistants.builtin_tools import BuiltinCall, BuiltinTool, ToolRefused, builtin_tool
from console.assistants.models import Assistant
from console.errors import ValidationFailed
from console.ids import PrefixedId
from console.json_schemas import instance_errors, schema_problems
from console.parsers import JsonRefused, json_text
from console.phone import InvalidPhoneNumber, to_e164
from console.tenants.models import Tenant
from tools_app.definitions import enabled_tools, http_tools_of
from tools_app.errors import ToolInUse, ToolLimitReached, ToolNameTaken, ToolUrlRefused
from tools_app.models import HttpTool
from webhooks_app import signing, transport

logger = logging.getLogger(__name__)

NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_DESCRIPTION = 1_000
TIMEOUT_MS_RANGE = (100, 5_000)
DEFAULT_TIMEOUT_MS = 3_000
MAX_ARGUMENTS_BYTES = 16 * 1024
MAX_RESULT_BYTES = 16 * 1024
DEFAULT_PARAMETERS = {"type": "object", "properties": {}}
API_FIELDS = ("name", "description", "parameters", "url", "timeoutMs")
USER_AGENT = "Stimmwerk-Tools/1"
new_tool_call_id = PrefixedId("tc")  # the `webhook-id` of each call


# --- The tools ---------------------------------------------------------------------------

def http_tool_values(*, tenant: Tenant, data: Mapping[str, Any], instance: HttpTool | None = None) -> dict[str, Any]:
    """The model's values for the API fields in `data`, checked (a create needs name,
    url; a change changes what it names). ValidationFailed/ToolUrlRefused name the
    field; ToolNameTaken (409) for a name the tenant has."""
    problems: dict[str, list[str]] = {}
    values: dict[str, Any] = {}
    for key in sorted(set(data) - set(API_FIELDS)):
        problems[key] = [gettext("Unknown field. Accepted: %(fields)s.") % {"fields": ", ".join(API_FIELDS)}]
    if instance is None:
        for key in ("name", "url"):
            if key not in data:
                problems[key] = [gettext("This field is required.")]
    if "name" in data:
        name = data["name"]
        if not isinstance(name, str) or not NAME.match(name):
            problems["name"] = [gettext("Send a name of a lowercase letter, then up to 63 lowercase letters, digits "
                                        "or _ (e.g. check_appointment).")]
        elif builtin_tool(name) is not None:
            problems["name"] = [gettext("'%(name)s' is a built-in tool; choose another name.") % {"name": name}]
        else:
            values["name"] = name
    if "description" in data:
        description = "" if data["description"] is None else data["description"]
        if not isinstance(description, str) or len(description) > MAX_DESCRIPTION or "\x00" in description:
            problems["description"] = [gettext("Send a string of at most %(limit)s characters.")
                                       % {"limit": f"{MAX_DESCRIPTION:,}"}]
        else:
            values["description"] = description
    if "parameters" in data:
        parameters = DEFAULT_PARAMETERS if data["parameters"] is None else data["parameters"]
        found = schema_problems(parameters, root_type="object")
        if found:
            problems["parameters"] = found
        else:
            values["parameters"] = parameters
    if "timeoutMs" in data:
        timeout = data["timeoutMs"]
        low, high = TIMEOUT_MS_RANGE
        if isinstance(timeout, bool) or not isinstance(timeout, int) or not low <= timeout <= high:
            problems["timeoutMs"] = [gettext("Send a whole number of milliseconds from %(low)s to %(high)s (at most "
                                             "5 s).") % {"low": low, "high": high}]
        else:
            values["timeout_ms"] = timeout
    if problems:
        raise ValidationFailed(details=problems)
    if instance is None:
        values.setdefault("parameters", dict(DEFAULT_PARAMETERS))
    if "url" in data:
        values["url"] = outbound.url_admit(data["url"], refused=ToolUrlRefused)
    name = values.get("name")
    if name and HttpTool.objects.for_tenant(tenant).filter(name=name).exclude(
            pk=instance.pk if instance else None).exists():
        raise ToolNameTaken(details={"name": [gettext("The tenant has an HTTP tool '%(name)s' already.")
                                              % {"name": name}]})
    return values


def http_tool_room_check(*, tenant: Tenant) -> None:
    """ToolLimitReached (409, `details.maxTools`) when the tenant has
    TOOLS_MAX_PER_TENANT tools already: the check of `http_tool_create`, which the
    admin's form asks too before it saves."""
    limit = settings.TOOLS_MAX_PER_TENANT
    if HttpTool.objects.for_tenant(tenant).count() >= limit:
        raise ToolLimitReached(details={"maxTools": limit})


@transaction.atomic
def http_tool_create(*, tenant: Tenant, data: Mapping[str, Any]) -> tuple[HttpTool, str]:
    """A new HTTP tool and its signing secret (shown once)."""
    values = http_tool_values(tenant=tenant, data=data)
    http_tool_room_check(tenant=tenant)
    try:
        with transaction.atomic():
            tool = HttpTool.objects.create(tenant=tenant, secret_nonce=signing.new_nonce(), **values)
    except IntegrityError:  # the same name, created at the same moment
        raise ToolNameTaken(details={"name": [f"The tenant has an HTTP tool '{values['name']}' already."]}) from None
    return tool, signing.secret_for(tool.pk, tool.secret_nonce)


@transaction.atomic
def http_tool_update(*, tool: HttpTool, data: Mapping[str, Any]) -> HttpTool:
    values = http_tool_values(tenant=tool.tenant, data=data, instance=tool)
    for name, value in values.items():
        setattr(tool, name, value)
    try:
        with transaction.atomic():
            tool.save(update_fields=[*values, "updated_at"])
    except IntegrityError:
        raise ToolNameTaken(details={"name": [f"The tenant has an HTTP tool '{tool.name}' already."]}) from None
    return tool


def assistants_using(tool: HttpTool) -> list[dict[str, str]]:
    return [{"id": assistant.pk, "name": assistant.name}
            for assistant in Assistant.objects.for_tenant(tool.tenant_id).only("id", "name", "tools")
            if tool.pk in (assistant.tools or [])]


@transaction.atomic
def http_tool_delete(*, tool: HttpTool) -> None:
    """Deletes a tool no assistant uses; else ToolInUse (409) naming the assistants."""
    using = assistants_using(tool)
    if using:
        raise ToolInUse(details={"assistants": using})
    tool.delete()


@transaction.atomic
def http_tool_rotate_secret(*, tool: HttpTool, keep_previous: bool = True,
                            now: datetime | None = None) -> tuple[HttpTool, str]:
    """A new secret; the one it replaces still signs (beside it) for
    WEBHOOK_SECRET_OVERLAP_SEC, or not at all without `keep_previous` (a leaked one)."""
    now = now or timezone.now()
    tool = HttpTool.objects.select_for_update().get(pk=tool.pk)
    if keep_previous:
        tool.previous_secret_nonce = tool.secret_nonce
        tool.previous_secret_expires_at = now + timedelta(seconds=settings.WEBHOOK_SECRET_OVERLAP_SEC)
    else:
        tool.previous_secret_nonce, tool.previous_secret_expires_at = "", None
    tool.secret_nonce = signing.new_nonce()
    tool.save(update_fields=["previous_secret_nonce", "previous_secret_expires_at", "secret_nonce", "updated_at"])
    return tool, signing.secret_for(tool.pk, tool.secret_nonce)


# --- Calling them --------------------------------------------------------------------------

def _error(tool: str, code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "tool": tool, "error": code, "message": message}


def _arguments_checked(name: str, parameters: dict[str, Any],
                       arguments: object) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(arguments as a dict, None) or (None, a tool error)."""
    if isinstance(arguments, (str, bytes)):
        if len(arguments) > MAX_ARGUMENTS_BYTES:
            return None, _error(name, codes.INVALID_ARGUMENTS, f"The arguments are over {MAX_ARGUMENTS_BYTES // 1024} KB.")
        try:
            arguments = json_text(arguments or "{}", what="The arguments")
        except JsonRefused as exc:
            return None, _error(name, codes.INVALID_ARGUMENTS, exc.message)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return None, _error(name, codes.INVALID_ARGUMENTS, "The arguments must be a JSON object.")
    if len(json.dumps(arguments, ensure_ascii=False).encode()) > MAX_ARGUMENTS_BYTES:
        return None, _error(name, codes.INVALID_ARGUMENTS,
                            f"The arguments are over {MAX_ARGUMENTS_BYTES // 1024} KB.")
    errors = instance_errors(parameters, arguments)
    if errors:
        return None, {**_error(name, codes.INVALID_ARGUMENTS, "The arguments do not fit the tool's parameters: "
                               + "; ".join(errors)), "details": errors}
    return arguments, None


# The attempt's error (webhooks_app.transport) → the tool error's code.
_TRANSPORT_ERRORS = (("refused:", codes.REFUSED), ("connection failed", codes.CONNECTION_FAILED),
                     ("no complete answer", codes.TIMEOUT), ("no valid answer", codes.INVALID_ANSWER),
                     ("redirect not followed", codes.HTTP_ERROR), ("HTTP ", codes.HTTP_ERROR))


def tool_http_call(*, tool: HttpTool, call_id: str, arguments: object) -> dict[str, Any]:
    """Calls the HTTP tool: `arguments` (a dict, or its JSON text) checked against the
    tool's `parameters`, POSTed as `{"type": "tool.call", "tool", "callId", "arguments"}`
    to its fixed URL, signed by the Standard Webhooks scheme with the tool's secret
    (`webhook-id` a new `tc_…` per call, `webhook-timestamp`, `webhook-signature`),
    through the SSRF guard, within the tool's timeout (at most 5 s for all of it).
    Returns `{"ok": true, "tool", "status", "result"}` with the answer's JSON (at most
    16 KB; an empty answer is null), or a tool error `{"ok": false, "tool", "error",
    "message"}` (its code one of console.tool_codes).
    Never raises for the remote side's failures."""
    arguments, error = _arguments_checked(tool.name, tool.parameters, arguments)
    if error is not None:
        return error
    try:
        payload = json.dumps({"type": "tool.call", "tool": tool.name, "callId": call_id, "arguments": arguments},
                             separators=(",", ":"), ensure_ascii=False)
        headers = signing.headers_for(tool, msg_id=new_tool_call_id(), payload=payload, now=timezone.now(),
                                      timestamp=time.time())
        timeout = min(tool.timeout_ms, TIMEOUT_MS_RANGE[1]) / 1000
        answer = transport.post(tool.url, body=payload.encode(), timeout=timeout,
                                headers={**headers, "User-Agent": USER_AGENT, "Accept": "application/json"},
                                allow_private=settings.OUTBOUND_ALLOW_PRIVATE_TARGETS, read_limit=MAX_RESULT_BYTES + 1)
    except Exception:  # noqa: BLE001 - a bug must not end the conversation: a tool error, logged
        logger.exception("HTTP tool %s (%s) failed unexpectedly", tool.pk, tool.name)
        return _error(tool.name, codes.INTERNAL_ERROR, "The tool could not be called.")
    if not answer.ok:
        code = next((code for prefix, code in _TRANSPORT_ERRORS if answer.error.startswith(prefix)),
                    codes.HTTP_ERROR)
        return {**_error(tool.name, code, f"The tool failed: {answer.error}."), "status": answer.status}
    if len(answer.content) > MAX_RESULT_BYTES:
        return _error(tool.name, codes.TOO_LARGE, f"The tool's answer is over {MAX_RESULT_BYTES // 1024} KB.")
    if not answer.content.strip():
        return {"ok": True, "tool": tool.name, "status": answer.status, "result": None}
    try:
        result = json_text(answer.content, what="The tool's answer")
    except JsonRefused as exc:  # not UTF-8, not standard JSON (NaN, Infinity), too deep, a NUL …
        return _error(tool.name, codes.INVALID_JSON, exc.message)
    return {"ok": True, "tool": tool.name, "status": answer.status, "result": result}


# A phone number in any format; an ISO date or moment ("2026-12-01",
# "2026-11-26T14:30:00+01:00", "2026/12/01") is matched first and kept as it is, since
# its digits would pass for a German number.
_PHONE_LIKE = re.compile(r"(?P<date>(?<![\w+])\d{4}([-/])\d{1,2}\2\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                         r"(?:Z|[+-]\d{2}:?\d{2})?)?(?!\w))"
                         r"|(?<![\w+])\+?\d[\d ()/.-]{4,18}\d(?!\w)")
MAX_NOTE = 500


def _numbers_in_e164(text: str) -> str:
    def e164(match: re.Match[str]) -> str:
        if match.group("date"):
            return match.group(0)
        try:
            return to_e164(match.group(0))
        except InvalidPhoneNumber:
            return match.group(0)
    return _PHONE_LIKE.sub(e164, text)


def tool_call_note(*, name: str, arguments: object, result: Mapping[str, Any]) -> str:
    """The transcript's system note of one tool call (role `system`, written by the
    conversation with calls_app.services.call_web_line): the tool, its arguments and
    what came of it, compact, at most 500 characters, every phone number in E.164 (an
    erasure by caller finds the notes that name the number by it: docs/privacy.md)."""
    if isinstance(arguments, (str, bytes)):
        try:
            arguments = json_text(arguments or "{}")
        except JsonRefused:
            pass
    shown = json.dumps(arguments, ensure_ascii=False, separators=(", ", ": "), default=str)
    outcome = (f"ok {json.dumps(result.get('result'), ensure_ascii=False, default=str)}" if result.get("ok")
               else f"error {result.get('error')}: {result.get('message', '')}")
    note = _numbers_in_e164(f"Tool {name} {shown} → {outcome}")
    return note if len(note) <= MAX_NOTE else note[:MAX_NOTE - 1] + "…"


def _validation_message(exc: ValidationFailed) -> str:
    return " ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.details.items()) or exc.message


def tool_run(*, assistant: Assistant, call_id: str, name: str, arguments: object,
             also: Collection[str] = ()) -> dict[str, Any]:
    """One tool call of the assistant's model during the call `call_id`: the one
    entry point of the conversation core. `name` must be one of the assistant's tools
    (`tool_definitions`); `arguments` (a dict or its JSON text) must fit its
    parameters. Built-in tools run as their owning app declared them
    (console.assistants.builtin_tools); HTTP tools are called (`tool_http_call`).
    Returns a result or a tool error (see the module), never raises for the model's or
    the tool's mistakes. A result may carry `action`: `transfer` (with the target in
    `result`: end the call toward it) or `end_call`. `also`: built-in tools the call
    offers beyond the assistant's (tool_definitions)."""
    try:
        return _tool_run(assistant, call_id, name, arguments, also)
    except Exception:  # noqa: BLE001 - the conversation goes on with a tool error, logged
        logger.exception("Tool %s of assistant %s failed unexpectedly in call %s", name, assistant.pk, call_id)
        return _error(str(name), codes.INTERNAL_ERROR, "The tool failed.")


def _tool_run(assistant: Assistant, call_id: str, name: str, arguments: object,
              also: Collection[str]) -> dict[str, Any]:
    enabled = enabled_tools(assistant=assistant, also=also)
    builtin = builtin_tool(name)
    if builtin is not None:
        if name not in enabled:
            return _error(name, codes.UNKNOWN_TOOL, f"This assistant has no tool '{name}'.")
        # The declared parameters, not those the model was shown (transfer_call's enum):
        # a target named by its number is allowed too; call_transfer is the check of
        # what may be reached.
        arguments, error = _arguments_checked(name, builtin.parameters, arguments)
        if error is not None:
            return error
        assert arguments is not None  # _arguments_checked gives the arguments or the error
        return _builtin_run(builtin, BuiltinCall(assistant=assistant, call_id=call_id, arguments=arguments))
    # Among the assistant's tools as its version has them (a tool renamed since keeps
    # the name the model was shown).
    tool = next((tool for tool in http_tools_of(assistant) if tool.name == str(name)[:64] and tool.pk in enabled),
                None)
    if tool is None:
        return _error(str(name)[:64], codes.UNKNOWN_TOOL, f"This assistant has no tool '{str(name)[:64]}'.")
    return tool_http_call(tool=tool, call_id=call_id, arguments=arguments)


def _builtin_run(tool: BuiltinTool, call: BuiltinCall) -> dict[str, Any]:
    """A built-in tool's run as a result, or its refusal as a tool error: a
    ValidationFailed (a callback's phone or time) is `invalid_arguments`."""
    try:
        outcome = tool.run(call)
    except ValidationFailed as exc:
        return _error(tool.name, codes.INVALID_ARGUMENTS, _validation_message(exc))
    except ToolRefused as exc:
        return _error(tool.name, exc.code, exc.message)
    return {"ok": True, "tool": tool.name, **outcome}
