"""The phone bridges' HTTP side (docs/telephony.md): a Twilio-compatible carrier's voice
webhook and status callbacks, and an Asterisk dialplan's registration of a call.

Each registers the call through calls_app (its cap check, the call) and grants its
conversation a single-use token (agent_app.services); the audio then comes over the
media stream (agent_app/twilio_stream.py) or AudioSocket (agent_app/audiosocket.py).
These are plain Django views behind DRF classes (for the OpenAPI document and the
error shape of other methods), like the carrier webhook: the carrier's exact form (or
body) is what its signature covers."""
import hmac
import logging
import re
import secrets
import uuid

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers

from agent_app import services
from agent_app.conversation import voicemail_text
from agent_app.errors import CallExists, InvalidCarrierSecret, InvalidTwilioSignature
from agent_app.models import AgentSession
from calls_app import phone_calls, twilio
from calls_app.carriers import CarrierError
from calls_app.errors import MinuteCapReached, UnknownCarrier, UnknownNumber
from console.api import OpenAPIView, accepts_query
from console.errors import ApiError, ValidationFailed
from console.openapi import errors
from console.parsers import json_loads
from console.phone import InvalidPhoneNumber, mask, to_e164

logger = logging.getLogger("agent_app.phone")

TWILIO, ASTERISK = "twilio", "asterisk"
# Twilio's call SIDs are "CA" and 32 hex digits; other carriers (and Asterisk's UNIQUEID) use letters, digits, ".", "-", "_".
_CALL_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_DURATION = re.compile(r"[0-9]{1,6}")


def _twiml(text):
    return HttpResponse(text, content_type="text/xml; charset=utf-8")


class _PlainPost(OpenAPIView):
    """POST goes straight to `post` with Django's request (the form as the carrier sent it)."""

    def dispatch(self, request, *args, **kwargs):
        if request.method == "POST":
            return self.post(request, *args, **kwargs)
        return super().dispatch(request, *args, **kwargs)


def _twilio_carrier(request, carrier_id):
    carrier = phone_calls.phone_carrier(carrier_id=carrier_id, kind=TWILIO)
    if carrier is None:
        raise UnknownCarrier()
    if not twilio.signature_valid(carrier, request):
        logger.warning("Twilio webhook for carrier %s with a missing or wrong signature (request %s)", carrier_id,
                       getattr(request, "request_id", "-"))
        raise InvalidTwilioSignature()
    return carrier


def _call_sid(form):
    sid = form.get("CallSid", "")
    if not _CALL_ID.fullmatch(sid):
        raise ValidationFailed.field("CallSid", "The carrier's call id: letters, digits, '-' and '_', 1–64.")
    return sid


TWILIO_FORM = inline_serializer("TwilioVoiceWebhook", {
    "CallSid": serializers.CharField(), "AccountSid": serializers.CharField(), "From": serializers.CharField(),
    "To": serializers.CharField(), "CallStatus": serializers.CharField(), "Direction": serializers.CharField(),
})


class TwilioIncomingView(_PlainPost):
    @accepts_query(OpenApiParameter("call", str, OpenApiParameter.QUERY, required=False,
                                    description="The outbound call (`cl_…`) the carrier dialled for us."))
    @extend_schema(
        request={"application/x-www-form-urlencoded": TWILIO_FORM},
        responses={(200, "text/xml"): OpenApiTypes.STR},
        parameters=[OpenApiParameter("X-Twilio-Signature", str, OpenApiParameter.HEADER, required=True)],
        extensions=errors(403, 404),
        summary="A Twilio-compatible carrier's voice webhook: TwiML that connects the call to the agent's stream",
    )
    def post(self, request, carrier_id):
        carrier = _twilio_carrier(request, carrier_id)
        form = request.POST
        call_sid = _call_sid(form)
        if form.get("Direction", "inbound").startswith("outbound"):
            return self._outbound(request, carrier, call_sid)
        try:
            called = to_e164(form.get("To", ""))
        except InvalidPhoneNumber:
            called = ""
        number = phone_calls.number_route(e164=called) if called else None
        if number is None:
            logger.warning("Twilio carrier %s: a call to %s, which no tenant owns: rejected", carrier.pk,
                           mask(called) or "?")
            return _twiml(twilio.twiml_reject())
        caller = phone_calls.caller_e164(form.get("From", ""))
        existing = phone_calls.phone_call_of(carrier=carrier, carrier_call_id=call_sid)
        if existing is not None:  # the carrier asks again (a retry): the same call, a new token
            token = services.phone_call_answer(call=existing, transport=TWILIO)
            return _twiml(twilio.twiml_stream(carrier.pk, token, request) if token else twilio.twiml_reject())
        try:
            _call, token = services.phone_call_register(
                carrier=carrier, number=number, carrier_call_id=call_sid, from_e164=caller, to_e164=called,
                transport=TWILIO)
        except MinuteCapReached:
            services.phone_call_reject(carrier=carrier, number=number, carrier_call_id=call_sid, from_e164=caller,
                                       to_e164=called)
            return _twiml(twilio.twiml_cap_notice())
        return _twiml(twilio.twiml_stream(carrier.pk, token, request))

    @staticmethod
    def _outbound(request, carrier, call_sid):
        """The callee of a call we dialled answered: its stream, minutes reserved at the request."""
        call = phone_calls.outbound_call_of(carrier=carrier, call_id=request.GET.get("call", ""))
        if call is None or not phone_calls.call_outbound_answered(call=call, carrier_call_id=call_sid):
            return _twiml(twilio.twiml_reject())
        token = services.phone_call_answer(call=call, transport=TWILIO)
        return _twiml(twilio.twiml_stream(carrier.pk, token, request) if token else twilio.twiml_reject())


class TwilioStatusView(_PlainPost):
    @accepts_query(OpenApiParameter("call", str, OpenApiParameter.QUERY, required=False,
                                    description="The outbound call (`cl_…`) the callback is about: a campaign's "
                                                "dial whose answer was lost is bound to the carrier's sid by it."))
    @extend_schema(
        request={"application/x-www-form-urlencoded": inline_serializer("TwilioStatusCallback", {
            "CallSid": serializers.CharField(), "CallStatus": serializers.CharField(),
            "CallDuration": serializers.IntegerField(required=False),
            "AnsweredBy": serializers.CharField(required=False)})},
        responses={204: None},
        parameters=[OpenApiParameter("X-Twilio-Signature", str, OpenApiParameter.HEADER, required=True)],
        extensions=errors(400, 403, 404),
        summary="A Twilio-compatible carrier's status callbacks: an ending status ends the call, once; an "
                "answering-machine verdict (AnsweredBy) is answered as the campaign chose",
    )
    def post(self, request, carrier_id):
        carrier = _twilio_carrier(request, carrier_id)
        form = request.POST
        call_sid = _call_sid(form)
        _bind_outbound(carrier, request.GET.get("call", ""), call_sid)
        if "AnsweredBy" in form and "CallStatus" not in form:
            _machine_verdict(carrier, call_sid, form.get("AnsweredBy", ""))
            return HttpResponse(status=204)
        duration = form.get("CallDuration", "0") or "0"
        if not _DURATION.fullmatch(duration):
            raise ValidationFailed.field("CallDuration", "Whole seconds.")
        phone_calls.call_phone_status(carrier=carrier, carrier_call_id=call_sid, status=form.get("CallStatus", ""),
                                      seconds=int(duration))
        return HttpResponse(status=204)


def _bind_outbound(carrier, call_id, call_sid):
    """A callback of an outbound call we dialled names our call (`?call=`, the dial's
    StatusCallback): the call learns the carrier's sid here if the dial's answer never
    stored it (it timed out after the carrier placed the call), so this callback and
    every later one apply to it. A call bound to another sid keeps it."""
    if not call_id:
        return
    call = phone_calls.outbound_call_of(carrier=carrier, call_id=call_id[:64])
    if call is not None and not phone_calls.call_outbound_answered(call=call, carrier_call_id=call_sid):
        logger.warning("Twilio carrier %s: a callback for call %s names sid %s, the call has another", carrier.pk,
                       call.pk, call_sid)


def _machine_verdict(carrier, call_sid, answered_by):
    """The asynchronous answering-machine detection asked for by a campaign's dial
    (calls_app.dialing): a machine is hung up on, or told the campaign's voicemail
    after the beep, as its listener answers; a person is talked to."""
    answer = phone_calls.call_machine_verdict(carrier=carrier, carrier_call_id=call_sid, answered_by=answered_by)
    if answer is None:
        return
    message = ""
    if not answer.hang_up and answer.touchpoint:
        call = phone_calls.phone_call_of(carrier=carrier, carrier_call_id=call_sid)
        try:
            message = voicemail_text(tenant=call.tenant, touchpoint=answer.touchpoint, variables=answer.variables,
                                     callback_number=call.from_e164)
        except ApiError as exc:  # e.g. a variable the contact lacks: no message rather than a broken one
            logger.warning("Call %s: the voicemail %s cannot be said (%s); hanging up", call.pk, answer.touchpoint,
                           exc.code)
    try:
        phone_calls.carrier_machine_answer(carrier=carrier, carrier_call_id=call_sid, message=message)
    except CarrierError as exc:
        logger.warning("Twilio carrier %s refused to end call %s at its answering machine: %s", carrier.pk,
                       call_sid, exc)


# --- Asterisk ----------------------------------------------------------------------------

def _asterisk_carrier(request, carrier_id):
    carrier = phone_calls.phone_carrier(carrier_id=carrier_id, kind=ASTERISK)
    if carrier is None:
        raise UnknownCarrier()
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    expected = phone_calls.carrier_bearer_secret(carrier)
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode()[:200], expected.encode()):
        raise InvalidCarrierSecret()
    return carrier


def _registration_fields(request):
    """`from`, `to` and `channel` of a registration: form-encoded as Asterisk's CURL()
    posts them, or a JSON object."""
    if request.content_type == "application/json":
        body = json_loads(request.body)
        if not isinstance(body, dict):
            raise ValidationFailed("The body must be a JSON object.")
    else:
        body = request.POST
    fields = {}
    for name in ("from", "to", "channel"):
        value = body.get(name, "")
        if not isinstance(value, str) or len(value) > 64:
            raise ValidationFailed.field(name, "A string of at most 64 characters.")
        fields[name] = value.strip()
    return fields


class AsteriskCallsView(_PlainPost):
    @extend_schema(
        request={"application/x-www-form-urlencoded": inline_serializer("AsteriskCall", {
            "from": serializers.CharField(required=False), "to": serializers.CharField(),
            "channel": serializers.CharField(required=False)})},
        responses={(200, "text/plain"): OpenApiTypes.STR},
        extensions=errors(400, 401, 402, 404, 409),
        summary="Register a call of an Asterisk PBX: answers the UUID its AudioSocket() connects with",
    )
    def post(self, request, carrier_id):
        carrier = _asterisk_carrier(request, carrier_id)
        fields = _registration_fields(request)
        try:
            called = to_e164(fields["to"])
        except InvalidPhoneNumber as exc:
            raise ValidationFailed.field("to", str(exc)) from None
        number = phone_calls.number_route(e164=called)
        if number is None:
            logger.warning("Asterisk carrier %s: a call to %s, which no tenant owns", carrier.pk, mask(called))
            raise UnknownNumber(details={"to": called})
        channel = fields["channel"]
        if channel and not _CALL_ID.fullmatch(channel):
            raise ValidationFailed.field("channel", "Asterisk's UNIQUEID: letters, digits, '.', '-' and '_'.")
        if channel and phone_calls.phone_call_of(carrier=carrier, carrier_call_id=channel) is not None:
            raise CallExists()
        carrier_call_id = channel or f"as-{secrets.token_hex(12)}"
        caller = phone_calls.caller_e164(fields["from"])
        token = str(uuid.uuid4())
        try:
            services.phone_call_register(carrier=carrier, number=number, carrier_call_id=carrier_call_id,
                                         from_e164=caller, to_e164=called, transport=AgentSession.Transport.AUDIOSOCKET,
                                         token=token)
        except MinuteCapReached:
            services.phone_call_reject(carrier=carrier, number=number, carrier_call_id=carrier_call_id,
                                       from_e164=caller, to_e164=called)
            raise
        return HttpResponse(token, content_type="text/plain; charset=utf-8")


class AsteriskTransferView(OpenAPIView):
    @extend_schema(
        responses={(200, "text/plain"): OpenApiTypes.STR},
        extensions=errors(401, 404),
        summary="The number an Asterisk call was handed over to (empty: none), read back by the dialplan",
    )
    def get(self, request, carrier_id, call_uuid):
        _asterisk_carrier(request, carrier_id)
        target = services.phone_transfer_target(token=call_uuid) if len(call_uuid) <= 64 else ""
        return HttpResponse(target, content_type="text/plain; charset=utf-8")
