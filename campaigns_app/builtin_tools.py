"""The built-in tool `opt_out` (console.assistants.builtin_tools): the caller objects to
further contact. Recorded on the call (the analysis shows `opted_out`), and the caller's
number goes on the tenant's blocklist, so that no campaign calls it again (a web call
has no number to block). Always offered on a campaign's call. Registered in
CampaignsAppConfig.ready()."""
from typing import Any

from django.utils.translation import gettext_lazy as _

from calls_app.selectors import caller_number
from calls_app.services import call_action_record
from campaigns_app.services import opt_out
from console.assistants.builtin_tools import BuiltinCall, BuiltinTool


def _opt_out(call: BuiltinCall) -> dict[str, Any]:
    call_action_record(call_id=call.call_id, tool="opt_out")
    number = caller_number(call_id=call.call_id)
    if number:
        opt_out(tenant=call.assistant.tenant, phone=number, call_id=call.call_id, note="opt_out im Gespräch")
    return {"result": {"recorded": True}}


OPT_OUT = BuiltinTool(
    name="opt_out", label=_("Record an objection (opt_out)"), owner="campaigns_app", position=50,
    description="Nimmt auf, dass der Anrufer keine weiteren Anrufe oder Kontakte wünscht.",
    parameters={
        "type": "object",
        "properties": {"reason": {"type": "string", "maxLength": 200}},
        "additionalProperties": False,
    },
    run=_opt_out, on_campaign_calls=True, done="den Wunsch nach keinen weiteren Anrufen vermerkt")
