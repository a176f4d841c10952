"""The `asterisk` kind: a PBX whose dialplan registers each call over HTTP (`POST
/voice/asterisk/<carrier>/calls`, answered with the UUID its `AudioSocket()` connects
with) and reads a hand-over back; its audio comes over AudioSocket, a TCP listener of
its own (agent_app/audiosocket.py, `manage.py audiosocket`) that runs this kind's codec.
It authenticates with the carrier's derived secret as a bearer token. It dials nobody:
outbound calls go through another carrier.

AudioSocket's wire: every frame is a 3-byte header — its kind and a 16-bit big-endian
length — and that many bytes. Kinds: 0x00 hangup, 0x01 the call's UUID (16 bytes; the
first frame), 0x03 a DTMF digit (one ASCII byte), 0x10 audio (signed linear 16-bit,
8 kHz, mono, little-endian), 0xff an error. We send the agent's audio as 0x10 frames of
20 ms and 0x00 when we hang up."""
import hmac
import logging
import secrets
import struct
import uuid
from typing import Any, ClassVar

from django.http import HttpRequest, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from calls_app.errors import CallExists, InvalidCarrierSecret, MinuteCapReached, UnknownNumber
from calls_app.kinds.base import CarrierKind, CodecError, InboundCall, MediaEvent, StatusReport, caller_e164
from calls_app.kinds.twilio import CALL_ID
from calls_app.signing import secret_of
from console.errors import ValidationFailed
from console.openapi import errors
from console.parsers import json_loads
from console.phone import InvalidPhoneNumber, mask, to_e164

logger = logging.getLogger("calls_app.phone")

NAME = "asterisk"


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

    paths: ClassVar[dict[str, str]] = {"incoming": "calls", "transfer": "calls/<str:call_uuid>/transfer",
                                       "whisper": "calls/<str:call_uuid>/whisper",
                                       "warm_outcome": "calls/<str:call_uuid>/warm"}
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
        "whisper": {
            "responses": {(200, "text/plain"): OpenApiTypes.STR},
            "extensions": errors(401, 404),
            "summary": "A warm hand-over of an Asterisk call: the UUID the person's AudioSocket() connects with to "
                       "hear the summary (empty: a plain hand-over)",
        },
        "warm_outcome": {
            "request": {"application/x-www-form-urlencoded": inline_serializer("AsteriskWarmOutcome", {
                "status": serializers.CharField(help_text="The dialplan's ${DIALSTATUS}.")})},
            "responses": {(200, "text/plain"): OpenApiTypes.STR},
            "extensions": errors(400, 401, 404),
            "summary": "The outcome of an Asterisk call's warm hand-over (Dial's DIALSTATUS), answered as text: "
                       "'answered'; 'resume' (not answered: connect the caller to AudioSocket with the call's UUID "
                       "again, the conversation goes on and offers a callback); 'not_answered' (the call cannot come "
                       "back: its callback is noted as a lead); empty (no warm hand-over, or reported before)",
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


# --- AudioSocket ------------------------------------------------------------------------------

HANGUP, UUID, DTMF, AUDIO, ERROR = 0x00, 0x01, 0x03, 0x10, 0xFF
HEADER_BYTES = 3
FRAME_BYTES = 320  # 20 ms of our audio per frame
MAX_AUDIO_BYTES = 3200  # 200 ms: a longer audio frame is refused
MAX_CONTROL_BYTES = 64  # hangup, DTMF and error frames carry a few bytes


def frame(kind: int, payload: bytes = b"") -> bytes:
    return struct.pack(">BH", kind, len(payload)) + payload


def frame_limit(kind: int) -> int:
    """The most bytes a frame of `kind` may carry; CodecError for a kind AudioSocket has not."""
    if kind not in (HANGUP, UUID, DTMF, AUDIO, ERROR):
        raise CodecError(f"a frame of the unknown kind 0x{kind:02x}")
    return MAX_AUDIO_BYTES if kind == AUDIO else 16 if kind == UUID else MAX_CONTROL_BYTES


class AudioSocketCodec:
    """AudioSocket's frames (header and payload, as the listener read them) as media events."""

    def __init__(self) -> None:
        self.started = False

    def parse(self, text: str | None, data: bytes | None) -> MediaEvent:
        if data is None or len(data) < HEADER_BYTES:
            raise CodecError("a frame that is not AudioSocket's")
        kind, payload = data[0], data[HEADER_BYTES:]
        if not self.started:
            if kind != UUID or len(payload) != 16:
                raise CodecError("a first frame that is not the call's UUID")
            self.started = True
            return MediaEvent("start", token=str(uuid.UUID(bytes=payload)), encoding="pcm_s16le")
        if kind == AUDIO:
            return MediaEvent("audio", audio=payload)
        if kind == DTMF:
            return MediaEvent("dtmf", digit=payload.decode("latin-1") if len(payload) == 1 else None)
        if kind == HANGUP:
            return MediaEvent("stop")
        if kind == ERROR:
            return MediaEvent("error", audio=payload)
        raise CodecError("a second UUID frame")

    def audio(self, chunk: bytes) -> list[bytes]:
        return [frame(AUDIO, chunk[offset:offset + FRAME_BYTES].ljust(FRAME_BYTES, b"\0"))
                for offset in range(0, len(chunk), FRAME_BYTES)]

    def mark(self, name: str) -> None:
        return None

    def clear(self) -> None:
        return None


KIND = CarrierKind(
    name=NAME, label="Asterisk (AudioSocket)", webhooks=AsteriskWebhooks(), transport="audiosocket",
    wire=("pcm_s16le", 8000), codec=AudioSocketCodec, websocket=False,
    setup="the dialplan registers each call at POST /voice/asterisk/{id}/calls with 'Authorization: Bearer <this "
          "secret>' (docs/telephony.md)",
    warm_by_dialplan=True,
)
