"""The built-in tool `send_sms` (console.assistants.builtin_tools): an SMS to the caller's
own number — a booking's confirmation, say — from one of the tenant's templates, through
its messaging provider (messaging_app.services.sms_send: only a German mobile number, never
a blocked one, within the daily cap). Once per call and template: the model calling it
again sends nothing more. Offered unless the tenant chose no SMS (provider `""`): with the
default `carrier` too, whose call through a carrier that cannot send SMS (SIP, Asterisk,
a browser) is refused in German. Registered in MessagingAppConfig.ready()."""
from typing import Any

from django.utils.translation import gettext_lazy as _

from console.assistants.builtin_tools import BuiltinCall, BuiltinTool, ToolRefused
from console.errors import ApiError, ValidationFailed
from console.tool_codes import SMS_REFUSED
from messaging_app import selectors, services
from messaging_app.texts import DEFAULT_TEMPLATES, MAX_VALUE, TEMPLATE_NAME

# What the model hears when the SMS cannot be sent (the caller is told, not the reason's details).
REFUSALS = {
    "messaging_not_configured": "Die Praxis verschickt keine SMS.",
    "sms_carrier_cannot_send": "Der Telefonieanbieter dieses Anrufs kann keine SMS senden.",
    "sms_no_caller": "Es gibt keine Rufnummer des Anrufers, an die eine SMS gehen könnte.",
    "sms_not_mobile": "SMS gehen nur an deutsche Mobilnummern; die Nummer des Anrufers ist keine.",
    "sms_number_blocked": "Diese Nummer bekommt keine Nachrichten mehr (Widerspruch).",
    "tenant_limit_reached": "Heute können keine weiteren SMS verschickt werden.",
}


def _send_sms(call: BuiltinCall) -> dict[str, Any]:
    template = call.arguments["template"]
    try:
        sms = services.sms_send(tenant=call.assistant.tenant, call_id=call.call_id, template=template,
                                variables=call.arguments.get("variables") or {},
                                key=f"{call.call_id}:send_sms:{template}")
    except ValidationFailed:
        raise
    except ApiError as exc:
        raise ToolRefused(SMS_REFUSED, REFUSALS.get(exc.code, "Die SMS kann nicht verschickt werden.")) from None
    # `queued`: it leaves once this turn's writes are committed (a job), `sent` on a retry.
    return {"result": {"sms": sms.pk, "status": str(sms.status), "template": sms.template}}


def _offered(assistant: Any) -> bool:
    return bool(selectors.messaging_settings_for(tenant=assistant.tenant).provider)


def _offered_in_call(assistant: Any, call_id: str) -> bool:
    return services.sms_possible(tenant=assistant.tenant, call_id=call_id)


def _shown(parameters: dict[str, Any], assistant: Any) -> dict[str, Any]:
    """The tenant's templates (its own and the defaults) as the template's enum."""
    names = sorted({*DEFAULT_TEMPLATES, *selectors.messaging_settings_for(tenant=assistant.tenant).templates})
    properties = {**parameters["properties"], "template": {**parameters["properties"]["template"], "enum": names}}
    return {**parameters, "properties": properties}


SEND_SMS = BuiltinTool(
    name="send_sms", label=_("Send the caller an SMS (send_sms)"), owner="messaging_app", position=70,
    description=("Schickt dem Anrufer eine SMS an seine eigene Mobilnummer, z. B. die Bestätigung eines Termins "
                 "(Vorlage `confirmation` mit `date` und `time`). Nur wenn der Anrufer das möchte."),
    parameters={
        "type": "object",
        "properties": {
            "template": {"type": "string", "pattern": TEMPLATE_NAME.pattern, "maxLength": 40},
            "variables": {"type": "object", "maxProperties": 10,
                          "additionalProperties": {"type": "string", "maxLength": MAX_VALUE}},
        },
        "required": ["template"],
        "additionalProperties": False,
    },
    run=_send_sms, offered=_offered, offered_in_call=_offered_in_call, shown=_shown)
