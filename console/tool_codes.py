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
# HTTP tools: the request and the answer.
REFUSED: Final = "refused"
CONNECTION_FAILED: Final = "connection_failed"
TIMEOUT: Final = "timeout"
HTTP_ERROR: Final = "http_error"
TOO_LARGE: Final = "too_large"
INVALID_JSON: Final = "invalid_json"
INVALID_ANSWER: Final = "invalid_answer"
# Anything unexpected (logged with its traceback).
INTERNAL_ERROR: Final = "internal_error"
