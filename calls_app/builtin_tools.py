"""The built-in tools whose effect is on the call (console.assistants.builtin_tools):
`create_callback` (a lead linked to the call), `transfer_call` (the one check of a
transfer; the transport is the conversation's) and `end_call` (recorded; the
conversation ends the call). Registered in CallsAppConfig.ready()."""
from typing import Any

from django.utils.translation import gettext_lazy as _

from calls_app.services import call_action_record, call_callback_create, call_transfer
from calls_app.warm_transfers import NOT_ANSWERED, UNSUPPORTED, call_warm_transfer, not_answered_message
from console import tool_codes as codes
from console.assistants.builtin_tools import BuiltinCall, BuiltinTool, ToolRefused
from console.assistants.models import Assistant
from console.assistants.services import TransferRefused


def _create_callback(call: BuiltinCall) -> dict[str, Any]:
    arguments = call.arguments
    lead = call_callback_create(call_id=call.call_id, phone=arguments.get("phone"),
                                preferred_time=arguments.get("preferred_time"), reason=arguments.get("reason", ""))
    resolved = lead.preferred_at_resolved
    return {"result": {"leadId": lead.pk, "phone": lead.phone,
                       "preferredAt": resolved.isoformat() if resolved else None}}


def _transfer_call(call: BuiltinCall) -> dict[str, Any]:
    """A hand-over to one of the assistant's targets: `mode` "warm" (or, without a
    mode, a target kept `warm`) rings the person first and tells them a summary
    (calls_app.warm_transfers); where the line cannot, it is a plain hand-over."""
    arguments = call.arguments
    try:
        target = call_transfer(call_id=call.call_id, target=arguments["target"],
                               mode=arguments.get("mode") or "")
    except TransferRefused as exc:
        raise ToolRefused(codes.TRANSFER_REFUSED, exc.message) from None
    if not target.pop("warm", False):
        return {"action": "transfer", "result": target}
    outcome = call_warm_transfer(call_id=call.call_id, target=target, reason=arguments.get("reason", ""))
    if outcome == NOT_ANSWERED:
        raise ToolRefused(codes.TRANSFER_NOT_ANSWERED, not_answered_message(name=target["name"]))
    if outcome == UNSUPPORTED:
        return {"action": "transfer", "result": target}
    return {"action": "transfer", "result": {**target, "mode": "warm"}}


def _end_call(call: BuiltinCall) -> dict[str, Any]:
    call_action_record(call_id=call.call_id, tool="end_call")
    return {"action": "end_call", "result": {"ending": True}}


def _has_targets(assistant: Assistant) -> bool:
    return bool(assistant.transfer_targets)


def _targets_as_enum(parameters: dict[str, Any], assistant: Assistant) -> dict[str, Any]:
    """The model sees no target but the assistant's (call_transfer allows no other)."""
    target = {**parameters["properties"]["target"], "enum": [t["name"] for t in assistant.transfer_targets]}
    return {**parameters, "properties": {**parameters["properties"], "target": target}}


CREATE_CALLBACK = BuiltinTool(
    name="create_callback", label=_("Create a callback (create_callback)"), owner="calls_app", position=10,
    description=(
        "Legt eine Rückrufbitte des Anrufers an (auch für Terminwünsche). Ohne phone gilt die Nummer des "
        "Anrufers; ist keine bekannt, fragen Sie danach und lesen Sie sie zur Bestätigung vor."),
    parameters={
        "type": "object",
        "properties": {
            "phone": {"type": "string", "maxLength": 40,
                      "description": "Rückrufnummer in beliebigem Format, z. B. 0171 2345678; weglassen für "
                                     "die Nummer des Anrufers."},
            "preferred_time": {"type": "string", "maxLength": 200,
                               "description": "Wunschzeit: die Worte des Anrufers (\"morgen Vormittag\", "
                                              "\"Dienstag um 10 Uhr\"), ein Kürzel (asap, +2h, today-am, "
                                              "today-pm, tomorrow-am, tomorrow-pm) oder eine ISO-8601-Zeit."},
            "reason": {"type": "string", "maxLength": 500, "description": "Das Anliegen in wenigen Worten."},
        },
        "additionalProperties": False,
    },
    run=_create_callback, done="eine Rückrufbitte aufgenommen")

TRANSFER_CALL = BuiltinTool(
    name="transfer_call", label=_("Transfer the call (transfer_call)"), owner="calls_app", position=30,
    description=(
        "Leitet den Anruf an eine Mitarbeiterin oder einen Mitarbeiter weiter. Nur die hinterlegten Ziele "
        "sind möglich; kündigen Sie die Weiterleitung vorher an. Mit mode \"warm\" wird die Person erst "
        "angerufen und hört eine kurze Zusammenfassung, bevor der Anrufer verbunden wird; nimmt niemand ab, "
        "sagen Sie das dem Anrufer und bieten Sie einen Rückruf an."),
    parameters={
        "type": "object",
        "properties": {"target": {"type": "string", "description": "Name des Weiterleitungsziels."},
                       "reason": {"type": "string", "maxLength": 200,
                                  "description": "Das Anliegen in wenigen Worten (die Zusammenfassung nennt es)."},
                       "mode": {"type": "string", "enum": ["cold", "warm"],
                                "description": "cold: sofort durchstellen; warm: erst mit Zusammenfassung "
                                               "übergeben. Ohne Angabe: wie beim Ziel hinterlegt."}},
        "required": ["target"],
        "additionalProperties": False,
    },
    run=_transfer_call, offered=_has_targets, shown=_targets_as_enum)

END_CALL = BuiltinTool(
    name="end_call", label=_("End the conversation (end_call)"), owner="calls_app", position=40,
    description="Beendet das Gespräch. Erst aufrufen, nachdem Sie sich verabschiedet haben.",
    parameters={
        "type": "object",
        "properties": {"reason": {"type": "string", "maxLength": 200}},
        "additionalProperties": False,
    },
    run=_end_call, on_campaign_calls=True)

TOOLS = (CREATE_CALLBACK, TRANSFER_CALL, END_CALL)
