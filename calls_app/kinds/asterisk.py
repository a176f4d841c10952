"""The `asterisk` kind: a PBX whose dialplan registers each call over HTTP (`POST
/voice/asterisk/<carrier>/calls`, answered with the UUID its `AudioSocket()` connects
with) and reads a hand-over back; its audio comes over AudioSocket, a TCP listener of
its own (agent_app/audiosocket.py, `manage.py audiosocket`). It authenticates with the
carrier's derived secret as a bearer token. It dials nobody: outbound calls go through
another carrier."""
import hmac
import logging
import secrets
import uuid
from typing import Any, ClassVar

from django.http import HttpRequest, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from calls_app.carrier_events import UnknownNumber
from calls_app.kinds.base import CarrierKind, InboundCall, StatusReport, caller_e164
from calls_app.kinds.twilio import CALL_ID
from calls_app.ledger import MinuteCapReached
from calls_app.signing import secret_of
from console.errors import ApiError, ValidationFailed
from console.openapi import errors
from console.parsers import json_loads
from console.phone import InvalidPhoneNumber, mask, to_e164

logger = logging.getLogger("calls_app.phone")

NAME = "asterisk"


class InvalidCarrierSecret(ApiError):
    status, code = 401, "unauthenticated"
    message = "Authorization: Bearer <the carrier's secret> is missing or wrong."


class CallExists(ApiError):
    status, code = 409, "call_exists"
    message = "A call with this channel id is registered already; its UUID was shown once."


def _registration_fields(request: HttpRequest) -> dict[str, str]:
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


class AsteriskWebhooks:
    """The dialplan's registration of a call (`incoming`, at `calls`) and its read-back
    of a hand-over (`transfer`)."""

    paths: ClassVar[dict[str, str]] = {"incoming": "calls", "transfer": "calls/<str:call_uuid>/transfer"}
    reconnects: ClassVar[bool] = False
    schema: ClassVar[dict[str, dict[str, Any]]] = {
        "incoming": {
            "request": {"application/x-www-form-urlencoded": inline_serializer("AsteriskCall", {
                "from": serializers.CharField(required=False), "to": serializers.CharField(),
                "channel": serializers.CharField(required=False)})},
            "responses": {(200, "text/plain"): OpenApiTypes.STR},
            "extensions": errors(400, 401, 402, 404, 409),
            "summary": "Register a call of an Asterisk PBX: answers the UUID its AudioSocket() connects with",
        },
        "transfer": {
            "responses": {(200, "text/plain"): OpenApiTypes.STR},
            "extensions": errors(401, 404),
            "summary": "The number an Asterisk call was handed over to (empty: none), read back by the dialplan",
        },
    }

    def verify(self, carrier: Any, request: HttpRequest) -> None:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        expected = secret_of(carrier.pk, carrier.secret_nonce)
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode()[:200], expected.encode()):
            raise InvalidCarrierSecret()

    def inbound(self, request: HttpRequest) -> InboundCall:
        fields = _registration_fields(request)
        try:
            called = to_e164(fields["to"])
        except InvalidPhoneNumber as exc:
            raise ValidationFailed.field("to", str(exc)) from None
        channel = fields["channel"]
        if channel and not CALL_ID.fullmatch(channel):
            raise ValidationFailed.field("channel", "Asterisk's UNIQUEID: letters, digits, '.', '-' and '_'.")
        return InboundCall(carrier_call_id=channel or f"as-{secrets.token_hex(12)}",
                           from_e164=caller_e164(fields["from"]), to_e164=called, token=str(uuid.uuid4()))

    def status(self, request: HttpRequest) -> StatusReport:
        raise NotImplementedError("an Asterisk dialplan sends no status callbacks")

    def connect(self, carrier: Any, token: str, request: HttpRequest) -> HttpResponse:
        return HttpResponse(token, content_type="text/plain; charset=utf-8")

    def refuse(self, carrier: Any, inbound: InboundCall, reason: str) -> HttpResponse:
        if reason == "unknown_number":
            logger.warning("Asterisk carrier %s: a call to %s, which no tenant owns", carrier.pk,
                           mask(inbound.to_e164))
            raise UnknownNumber(details={"to": inbound.to_e164})
        if reason == "cap":
            raise MinuteCapReached()
        raise CallExists()


KIND = CarrierKind(
    name=NAME, label="Asterisk (AudioSocket)", webhooks=AsteriskWebhooks(), transport="audiosocket",
    wire=("pcm_s16le", 8000),
    setup="the dialplan registers each call at POST /voice/asterisk/{id}/calls with 'Authorization: Bearer <this "
          "secret>' (docs/telephony.md)",
)
