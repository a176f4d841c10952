"""The codes of tool errors, declared once: what `tool_run` and `tool_http_call`
(tools_app.services) give the model back as `{"ok": false, "tool", "error": <code>,
"message"}` when a tool call did not give a result (docs/api.md, "Tool errors"). In the
core because the apps that declare built-in tools (console.assistants.builtin_tools)
refuse with them too, and none of them may import tools_app. The conversation goes on after
each. tests/console/test_code_vocabularies.py checks that each is documented and used, and
that no tool error spells its code out as a literal."""
from typing import Final

# The model's call.
UNKNOWN_TOOL: Final = "unknown_tool"
INVALID_ARGUMENTS: Final = "invalid_arguments"
# Built-in tools.
TRANSFER_REFUSED: Final = "transfer_refused"
TRANSFER_NOT_ANSWERED: Final = "transfer_not_answered"
KNOWLEDGE_UNAVAILABLE: Final = "knowledge_unavailable"
SMS_REFUSED: Final = "sms_refused"
# The calendar tools (calendars_app.services: find_slots, book/move/cancel_appointment).
CALENDAR_UNAVAILABLE: Final = "calendar_unavailable"
SLOT_TAKEN: Final = "slot_taken"
APPOINTMENT_NOT_FOUND: Final = "appointment_not_found"
APPOINTMENT_AMBIGUOUS: Final = "appointment_ambiguous"
APPOINTMENT_CHANGED: Final = "appointment_changed"
APPOINTMENT_TYPE_UNKNOWN: Final = "appointment_type_unknown"
NO_APPOINTMENT_TYPES: Final = "no_appointment_types"
CALENDAR_MISSING: Final = "calendar_missing"
INVALID_START: Final = "invalid_start"
CALLER_MISSING: Final = "caller_missing"
# HTTP tools: the request and the answer.
REFUSED: Final = "refused"
CONNECTION_FAILED: Final = "connection_failed"
TIMEOUT: Final = "timeout"
HTTP_ERROR: Final = "http_error"
TOO_LARGE: Final = "too_large"
INVALID_JSON: Final = "invalid_json"
INVALID_ANSWER: Final = "invalid_answer"
# A test call's HTTP tool the scenario gives no answer for (agent_app.scenario_runs).
NO_STUB: Final = "no_stub"
# Anything unexpected (logged with its traceback).
INTERNAL_ERROR: Final = "internal_error"
