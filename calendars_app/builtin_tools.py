"""The calendar's built-in tools (console.assistants.builtin_tools): `find_slots`,
`book_appointment`, `move_appointment`, `cancel_appointment`, running
calendars_app.services for the caller of the call (`call.caller_e164`, told by
tools_app). A failure the agent must say (the slot went, the calendar does not answer,
no such appointment) is a tool error with its code and a German message that carries
what to offer instead. Registered in CalendarsAppConfig.ready()."""
from typing import Any

from django.utils.translation import gettext_lazy as _

from calendars_app import services
from console.assistants.builtin_tools import BuiltinCall, BuiltinTool, ToolRefused
from console.phone import InvalidPhoneNumber, to_e164


def _has_types(assistant: Any) -> bool:
    return bool(getattr(assistant, "appointment_types", None))


def _answer(result: dict[str, Any]) -> dict[str, Any]:
    """A service's answer as the tool's result, or its failure as a tool error whose
    message names what is offered instead (the next free slots, the caller's appointments)."""
    if result.get("ok"):
        return {"result": {key: value for key, value in result.items() if key != "ok"}}
    message = result["message"]
    offered = result.get("slots") or result.get("appointments") or []
    if offered:
        message += " Stattdessen: " + "; ".join(f"{item['said']} ({item.get('start') or item.get('appointment')})"
                                               for item in offered)
    if result.get("types"):
        message += " Terminarten: " + ", ".join(result["types"]) + "."
    raise ToolRefused(result["error"], message)


def _find_slots(call: BuiltinCall) -> dict[str, Any]:
    return _answer(services.find_slots(assistant=call.assistant, when=call.arguments.get("when"),
                                       type_name=call.arguments.get("type")))


def _booking_number(call: BuiltinCall) -> str:
    """The number the appointment is booked under: the call's caller; only a call without
    one (a web session) takes the number the caller said (`phone`). Moving and cancelling
    find appointments by the call's own number alone (never a number said)."""
    if call.caller_e164:
        return call.caller_e164
    try:
        return to_e164(call.arguments.get("phone") or "")
    except InvalidPhoneNumber:
        return ""


def _book(call: BuiltinCall) -> dict[str, Any]:
    return _answer(services.appointment_book(
        assistant=call.assistant, start=call.arguments["start"], caller_e164=_booking_number(call),
        caller_name=call.arguments["name"], type_name=call.arguments.get("type"), call_id=call.call_id))


def _move(call: BuiltinCall) -> dict[str, Any]:
    return _answer(services.appointment_move(
        assistant=call.assistant, caller_e164=call.caller_e164, caller_name=call.arguments["name"],
        start=call.arguments["start"], when=call.arguments.get("current")))


def _cancel(call: BuiltinCall) -> dict[str, Any]:
    return _answer(services.appointment_cancel(
        assistant=call.assistant, caller_e164=call.caller_e164, caller_name=call.arguments["name"],
        when=call.arguments.get("current")))


_TYPE = {"type": "string", "maxLength": 100, "description": "Die Terminart (nur nötig, wenn es mehrere gibt)."}
_NAME = {"type": "string", "minLength": 1, "maxLength": 200, "description": "Der Name des Anrufers."}
_PHONE = {"type": "string", "maxLength": 40,
          "description": "Nur in einem Gespräch ohne Anrufernummer (Web): die Nummer, die der Anrufer nennt."}
_START = {"type": "string", "minLength": 10, "maxLength": 40,
          "description": "Der Beginn, wie find_slots ihn nannte (ISO 8601, z. B. 2026-12-01T10:00:00+01:00)."}
_CURRENT = {"type": "string", "maxLength": 200,
            "description": "Welcher Termin (die Worte des Anrufers, z. B. \"am Dienstag\"), wenn er mehrere hat."}

FIND_SLOTS = BuiltinTool(
    name="find_slots", label=_("Find free appointments (find_slots)"), owner="calendars_app", position=60,
    description=(
        "Sucht freie Termine im Kalender. when: der Wunsch des Anrufers in seinen Worten (\"nächsten Dienstag "
        "vormittag\", \"übermorgen um halb elf\", \"am 3.12.\"). Nennen Sie dem Anrufer die Termine mit Wochentag, "
        "Datum und Uhrzeit in Worten (das Feld said), bevor Sie buchen."),
    parameters={"type": "object", "properties": {"when": {"type": "string", "maxLength": 200,
                                                          "description": "Der Terminwunsch in den Worten des "
                                                                         "Anrufers oder als ISO-8601-Zeit."},
                                                 "type": _TYPE},
                "additionalProperties": False},
    run=_find_slots, offered=_has_types)

BOOK_APPOINTMENT = BuiltinTool(
    name="book_appointment", label=_("Book an appointment (book_appointment)"), owner="calendars_app",
    position=61,
    description=(
        "Bucht einen Termin, den find_slots angeboten und der Anrufer bestätigt hat, auf seinen Namen und seine "
        "Nummer. Lesen Sie danach den gebuchten Termin vor (said)."),
    parameters={"type": "object", "properties": {"start": _START, "name": _NAME, "type": _TYPE, "phone": _PHONE},
                "required": ["start", "name"], "additionalProperties": False},
    run=_book, offered=_has_types)

MOVE_APPOINTMENT = BuiltinTool(
    name="move_appointment", label=_("Move an appointment (move_appointment)"), owner="calendars_app",
    position=62,
    description=("Verschiebt den Termin des Anrufers (gefunden über seine Nummer und seinen Namen) auf einen "
                 "neuen Beginn, den find_slots angeboten hat."),
    parameters={"type": "object", "properties": {"name": _NAME, "start": _START, "current": _CURRENT},
                "required": ["name", "start"], "additionalProperties": False},
    run=_move, offered=_has_types)

CANCEL_APPOINTMENT = BuiltinTool(
    name="cancel_appointment", label=_("Cancel an appointment (cancel_appointment)"), owner="calendars_app",
    position=63,
    description="Sagt den Termin des Anrufers ab (gefunden über seine Nummer und seinen Namen).",
    parameters={"type": "object", "properties": {"name": _NAME, "current": _CURRENT},
                "required": ["name"], "additionalProperties": False},
    run=_cancel, offered=_has_types)

TOOLS = (FIND_SLOTS, BOOK_APPOINTMENT, MOVE_APPOINTMENT, CANCEL_APPOINTMENT)
