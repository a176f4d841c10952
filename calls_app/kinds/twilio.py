"""The `twilio` kind: Twilio-compatible carriers (Twilio itself; Telnyx and others speak
the same protocol) — their credentials, the signature of their webhooks and the TwiML
we answer with, their Media Streams wire, and their REST API's Calls resource, through
which outbound calls are placed and calls are handed over or ended.

The `twilio` package is the reference where it serves: its `RequestValidator` checks
`X-Twilio-Signature` exactly as Twilio computes it (HMAC-SHA1 over the full public URL
and the sorted form parameters, base64), its TwiML builder writes the answers. The REST
calls are form posts, written out here so that `api_base` (Twilio's host by default, a
fake server on loopback in the tests) is the only thing that differs."""
import base64
import binascii
import json
import logging
import re
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, ClassVar

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers
from twilio.request_validator import RequestValidator
from twilio.twiml.voice_response import Connect, Dial, VoiceResponse

from calls_app.carrier_protocol import DialOutcomeUnknown
from calls_app.errors import InvalidTwilioSignature
from calls_app.kinds.base import (
    AdapterBase,
    Capabilities,
    CarrierError,
    CarrierKind,
    CodecError,
    CredentialField,
    DialOptions,
    InboundCall,
    MediaEvent,
    Probe,
    StatusReport,
    WarmLeg,
    caller_e164,
)
from calls_app.kinds.credentials import credentials_of
from console.errors import ApiError, ValidationFailed
from console.openapi import errors
from console.parsers import json_loads
from console.phone import InvalidPhoneNumber, mask, to_e164

logger = logging.getLogger("calls_app.phone")

NAME = "twilio"
API_BASE = "https://api.twilio.com"
SIGNATURE_HEADER = "X-Twilio-Signature"
# What a caller hears when the tenant's minutes are used up (then the call is hung up).
CAP_NOTICE = ("Leider können wir Ihren Anruf im Moment nicht entgegennehmen, weil das Gesprächskontingent "
              "erschöpft ist. Bitte versuchen Sie es später noch einmal. Auf Wiederhören.")
# Twilio's call SIDs are "CA" and 32 hex digits; other carriers use letters, digits, ".", "-", "_".
CALL_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_DURATION = re.compile(r"[0-9]{1,6}")
# The ends of a call to a person that nobody answered.
_NOT_ANSWERED = frozenset(("busy", "no-answer", "failed", "canceled"))


class PublicUrlMissing(CarrierError):
    pass


def _api_base(value: str) -> str:
    value = (value or API_BASE).rstrip("/")
    if not value.startswith(("http://", "https://")) or len(value) > 200:
        raise ValueError("Eine http(s)-Adresse von höchstens 200 Zeichen.")
    return value


def _account_sid(value: str) -> str:
    if not CALL_ID.fullmatch(value):
        raise ValueError("Die Konto-SID (AC…): Buchstaben und Ziffern, höchstens 64.")
    return value


CREDENTIALS = (
    CredentialField("account_sid", "Konto-SID", "twilio: die SID des Kontos (AC…)", clean=_account_sid),
    CredentialField("auth_token", "Auth-Token", "twilio: das Auth-Token des Kontos (versiegelt gespeichert)",
                    secret=True),
    CredentialField("api_base", "REST-API-Adresse", "twilio: die Basisadresse der REST-API (Standard: Twilios)",
                    required=False, default=API_BASE, clean=_api_base),
)


def public_base(request: HttpRequest | None = None) -> str:
    """Where the carrier reaches this service: VOICE_PUBLIC_BASE_URL behind a proxy (the
    scheme and host the carrier signs), else the request's own."""
    base: str = settings.VOICE_PUBLIC_BASE_URL.rstrip("/")
    if base:
        return base
    if request is not None:
        return request.build_absolute_uri("/").rstrip("/")
    raise PublicUrlMissing("VOICE_PUBLIC_BASE_URL is not set: the carrier cannot be told where to reach us.")


def stream_url(carrier_id: str, request: HttpRequest | None = None) -> str:
    """The Media Streams WebSocket of the carrier: on AGENT_WS_URL where the agent's
    WebSockets are served apart (make run: a port of their own), else on the public
    host with ws(s) for http(s)."""
    base = settings.AGENT_WS_URL.rstrip("/")
    if not base:
        http_base = public_base(request)
        base = "wss" + http_base[5:] if http_base.startswith("https") else "ws" + http_base[4:]
    return f"{base}/voice/{NAME}/{carrier_id}/stream"


def signature_valid(carrier: Any, request: HttpRequest) -> bool:
    """Whether the request carries the signature the carrier's auth token makes of the
    full public URL and the form parameters."""
    signature = request.headers.get(SIGNATURE_HEADER, "")
    token = credentials_of(carrier).get("auth_token", "")
    if not signature or not token or len(signature) > 200:
        return False
    url = public_base(request) + request.get_full_path()
    return bool(RequestValidator(token).validate(url, request.POST, signature))


# --- TwiML answers --------------------------------------------------------------------

def _twiml(response: VoiceResponse) -> HttpResponse:
    return HttpResponse(str(response), content_type="text/xml; charset=utf-8")


def twiml_stream(carrier_id: str, token: str, request: HttpRequest | None = None) -> VoiceResponse:
    """Connect the call to our Media Streams WebSocket, the single-use token as the
    stream's custom parameter (Twilio hands it back in the stream's `start`)."""
    response = VoiceResponse()
    connect = Connect()
    stream = connect.stream(url=stream_url(carrier_id, request))
    stream.parameter(name="token", value=token)
    response.append(connect)
    return response


def twiml_reject() -> VoiceResponse:
    response = VoiceResponse()
    response.reject()
    return response


def twiml_cap_notice() -> VoiceResponse:
    return twiml_notice(CAP_NOTICE)


def twiml_notice(text: str) -> VoiceResponse:
    """`text` said in German, then the hang-up."""
    response = VoiceResponse()
    response.say(text, language="de-DE")
    response.hangup()
    return response


def twiml_dial(target: str) -> str:
    response = VoiceResponse()
    response.append(Dial(target))
    return str(response)


def twiml_conference(room: str, *, starts: bool, say: str = "") -> str:
    """`say` (the summary, to the person), then the warm hand-over's conference `room`:
    the person's entry starts it (`starts`), the caller waits in it silently until then;
    either leaving ends it."""
    response = VoiceResponse()
    if say:
        response.say(say, language="de-DE")
    dial = Dial()
    dial.conference(room, start_conference_on_enter=starts, end_conference_on_exit=True, beep=False,
                    wait_url="")
    response.append(dial)
    return str(response)


def twiml_machine_answer(message: str = "") -> str:
    """What an answering machine gets: `message` (a campaign's voicemail) said after the
    beep, then the hang-up."""
    response = VoiceResponse()
    if message:
        response.say(message, language="de-DE")
    response.hangup()
    return str(response)


# --- Its webhooks --------------------------------------------------------------------------

def _call_sid(form: Any) -> str:
    sid = form.get("CallSid", "")
    if not CALL_ID.fullmatch(sid):
        raise ValidationFailed.field("CallSid", "The carrier's call id: letters, digits, '-' and '_', 1–64.")
    return str(sid)


_SIGNED = [OpenApiParameter(SIGNATURE_HEADER, str, OpenApiParameter.HEADER, required=True)]


class TwilioWebhooks:
    """The voice webhook (`incoming`: TwiML that connects the call to the agent's
    stream) and the status callbacks (`status`), both signed with the auth token."""

    paths: ClassVar[dict[str, str]] = {"incoming": "incoming", "status": "status", "warm": "warm"}
    # The carrier asking again for a call it announced (a retry) gets a new token.
    reconnects: ClassVar[bool] = True
    schema: ClassVar[dict[str, dict[str, Any]]] = {
        "incoming": {
            "query": [OpenApiParameter("call", str, OpenApiParameter.QUERY, required=False,
                                       description="The outbound call (`cl_…`) the carrier dialled for us.")],
            "request": {"application/x-www-form-urlencoded": inline_serializer("TwilioVoiceWebhook", {
                "CallSid": serializers.CharField(), "AccountSid": serializers.CharField(),
                "From": serializers.CharField(), "To": serializers.CharField(),
                "CallStatus": serializers.CharField(), "Direction": serializers.CharField()})},
            "responses": {(200, "text/xml"): OpenApiTypes.STR},
            "parameters": _SIGNED,
            "extensions": errors(403, 404),
            "summary": "A Twilio-compatible carrier's voice webhook: TwiML that connects the call to the agent's "
                       "stream",
        },
        "status": {
            "query": [OpenApiParameter("call", str, OpenApiParameter.QUERY, required=False,
                                       description="The outbound call (`cl_…`) the callback is about: a campaign's "
                                                   "dial whose answer was lost is bound to the carrier's sid by it.")],
            "request": {"application/x-www-form-urlencoded": inline_serializer("TwilioStatusCallback", {
                "CallSid": serializers.CharField(), "CallStatus": serializers.CharField(),
                "CallDuration": serializers.IntegerField(required=False),
                "AnsweredBy": serializers.CharField(required=False)})},
            "responses": {204: None},
            "parameters": _SIGNED,
            "extensions": errors(400, 403, 404),
            "summary": "A Twilio-compatible carrier's status callbacks: an ending status ends the call, once; an "
                       "answering-machine verdict (AnsweredBy) is answered as the campaign chose",
        },
        "warm": {
            "query": [OpenApiParameter("transfer", str, OpenApiParameter.QUERY, required=True,
                                       description="Our warm hand-over the call to the person belongs to."),
                      OpenApiParameter("event", str, OpenApiParameter.QUERY, required=False,
                                       description="`status`: the call's status callback (its end), else its "
                                                   "answer.")],
            "request": {"application/x-www-form-urlencoded": inline_serializer("TwilioWarmLeg", {
                "CallSid": serializers.CharField(), "CallStatus": serializers.CharField()})},
            "responses": {(200, "text/xml"): OpenApiTypes.STR, 204: None},
            "parameters": _SIGNED,
            "extensions": errors(400, 403, 404),
            "summary": "A Twilio-compatible carrier's call to a person for a warm hand-over: answered, the person "
                       "hears the German summary and enters the conference the caller joins; its end without an "
                       "answer gives the caller back to the agent",
        },
    }

    def verify(self, carrier: Any, request: HttpRequest) -> None:
        if not signature_valid(carrier, request):
            logger.warning("Twilio webhook for carrier %s with a missing or wrong signature (request %s)",
                           carrier.pk, getattr(request, "request_id", "-"))
            raise InvalidTwilioSignature()

    def inbound(self, request: HttpRequest) -> InboundCall:
        form = request.POST
        call_sid = _call_sid(form)
        if form.get("Direction", "inbound").startswith("outbound"):
            return InboundCall(carrier_call_id=call_sid, outbound=True, outbound_call_id=request.GET.get("call", ""))
        try:
            called = to_e164(form.get("To", ""))
        except InvalidPhoneNumber:
            called = ""
        return InboundCall(carrier_call_id=call_sid, from_e164=caller_e164(form.get("From", "")), to_e164=called)

    def status(self, request: HttpRequest) -> StatusReport:
        form = request.POST
        call_sid = _call_sid(form)
        outbound_call_id = request.GET.get("call", "")[:64]
        if "AnsweredBy" in form and "CallStatus" not in form:
            return StatusReport(carrier_call_id=call_sid, answered_by=form.get("AnsweredBy", ""),
                                outbound_call_id=outbound_call_id)
        duration = form.get("CallDuration", "0") or "0"
        if not _DURATION.fullmatch(duration):
            raise ValidationFailed.field("CallDuration", "Whole seconds.")
        return StatusReport(carrier_call_id=call_sid, status=form.get("CallStatus", ""), seconds=int(duration),
                            outbound_call_id=outbound_call_id)

    def warm_leg(self, request: HttpRequest) -> WarmLeg:
        _call_sid(request.POST)
        transfer_id = request.GET.get("transfer", "")[:32]
        ended = request.GET.get("event") == "status" and request.POST.get("CallStatus") in _NOT_ANSWERED
        return WarmLeg(transfer_id=transfer_id, ended=ended)

    def warm_answer(self, *, summary: str | None, room: str, gone: str) -> HttpResponse:
        if summary is None:
            return _twiml(twiml_notice(gone))
        return HttpResponse(twiml_conference(room, starts=True, say=summary), content_type="text/xml; charset=utf-8")

    def connect(self, carrier: Any, token: str, request: HttpRequest) -> HttpResponse:
        return _twiml(twiml_stream(carrier.pk, token, request))

    def refuse(self, carrier: Any, inbound: InboundCall, reason: str) -> HttpResponse:
        if reason == "unknown_number":
            logger.warning("Twilio carrier %s: a call to %s, which no tenant owns: rejected", carrier.pk,
                           mask(inbound.to_e164) or "?")
        return _twiml(twiml_cap_notice() if reason == "cap" else twiml_reject())


# --- Its media stream (Media Streams) ---------------------------------------------------------

# Media messages carry 20 ms (a few hundred bytes of JSON); the start message a little more.
MAX_MESSAGE_BYTES = 8192
ENCODINGS = {"audio/x-mulaw": "mulaw", "audio/x-alaw": "alaw"}
# Media payloads: at least one sample, at most 200 ms of 8 kHz G.711.
MAX_MEDIA_BYTES = 1600
FRAME_BYTES = 160  # 20 ms of 8 kHz G.711 per media message, as the carrier sends its own


def _dumps(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))


class MediaStreamsCodec:
    """Twilio's Media Streams: JSON text frames. In: `connected`, `start` (`streamSid`,
    `callSid`, `customParameters.token`, `mediaFormat`), `media` (base64 G.711, 20 ms),
    `dtmf`, `mark` (a mark of ours whose audio was played), `stop`. Out: `media` (base64,
    in the encoding the `start` announced: `audio/x-mulaw` or `audio/x-alaw`), `mark`
    and `clear`. A frame that is not a small JSON object, an unknown event, an event
    before the `start`, another `streamSid`, or base64 that is not 1 sample to 200 ms of
    the announced audio is a CodecError."""

    def __init__(self) -> None:
        self.stream_sid: str | None = None

    def parse(self, text: str | None, data: bytes | None) -> MediaEvent:
        if text is None or len(text) > MAX_MESSAGE_BYTES:
            raise CodecError("a frame that is not a JSON text of at most 8 KiB")
        try:
            message = json_loads(text)
        except ApiError:
            message = None
        if not isinstance(message, dict) or not isinstance(message.get("event"), str):
            raise CodecError('a frame that is not a JSON object with an "event"')
        event = message["event"]
        if event == "connected":
            return MediaEvent("ignore")
        if event == "start":
            return self._start(message)
        if self.stream_sid is None:
            raise CodecError(f"'{event[:20]}' before the stream's start")
        if message.get("streamSid") != self.stream_sid:
            raise CodecError("a message of another streamSid")
        if event == "media":
            return MediaEvent("audio", audio=_payload(message))
        if event == "dtmf":
            dtmf = message.get("dtmf")
            digit = dtmf.get("digit") if isinstance(dtmf, dict) else None
            return MediaEvent("dtmf", digit=digit if isinstance(digit, str) else None)
        if event in ("mark", "stop"):
            return MediaEvent(event)  # mark: a part of the agent's speech was played out
        raise CodecError(f"an unknown event '{event[:20]}'")

    def _start(self, message: dict[str, Any]) -> MediaEvent:
        if self.stream_sid is not None:
            raise CodecError("a second start")
        start = message.get("start")
        if not isinstance(start, dict):
            raise CodecError("a start without its 'start' object")
        stream_sid, call_sid = start.get("streamSid", message.get("streamSid")), start.get("callSid")
        params = start["customParameters"] if isinstance(start.get("customParameters"), dict) else {}
        media_format = start["mediaFormat"] if isinstance(start.get("mediaFormat"), dict) else {}
        encoding = ENCODINGS.get(media_format.get("encoding", "audio/x-mulaw"))
        if not (isinstance(stream_sid, str) and 0 < len(stream_sid) <= 64 and isinstance(call_sid, str)
                and 0 < len(call_sid) <= 64):
            raise CodecError("a start without streamSid and callSid")
        if encoding is None or media_format.get("sampleRate", 8000) != 8000 or media_format.get("channels", 1) != 1:
            raise CodecError(f"a media format other than 8 kHz mono μ-law or A-law: {str(media_format)[:80]}")
        self.stream_sid = stream_sid
        return MediaEvent("start", stream_id=stream_sid, call_id=call_sid, token=params.get("token"),
                          encoding=encoding)

    def audio(self, chunk: bytes) -> list[str]:
        return [_dumps({"event": "media", "streamSid": self.stream_sid,
                        "media": {"payload": base64.b64encode(chunk[offset:offset + FRAME_BYTES]).decode()}})
                for offset in range(0, len(chunk), FRAME_BYTES)]

    def mark(self, name: str) -> str:
        return _dumps({"event": "mark", "streamSid": self.stream_sid, "mark": {"name": name}})

    def clear(self) -> str:
        return _dumps({"event": "clear", "streamSid": self.stream_sid})


def _payload(message: dict[str, Any]) -> bytes:
    media = message.get("media")
    payload = media.get("payload") if isinstance(media, dict) else None
    if not isinstance(payload, str) or len(payload) > 4 * MAX_MEDIA_BYTES // 3 + 4:
        raise CodecError("media without a payload of at most 200 ms")
    try:
        audio = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise CodecError("media whose payload is not base64") from None
    if not 0 < len(audio) <= MAX_MEDIA_BYTES:
        raise CodecError("media that is not 1 sample to 200 ms of 8 kHz audio")
    return audio


# --- The REST API ---------------------------------------------------------------------

class TwilioCarrierAdapter(AdapterBase):
    """Outbound calls, hand-overs and hang-ups through a twilio carrier's REST API.

    `dial` creates the call with Twilio's Calls resource: `Url` is our incoming webhook
    (the same stream then serves the callee), `StatusCallback` our status webhook,
    `TimeLimit` the call's grant. Of its `DialOptions`, `machine_detection` asks for
    asynchronous answering-machine detection (`MachineDetection=DetectMessageEnd`,
    `AsyncAmd=true`, the verdict posted to the status webhook), `idempotency_key` is
    sent as `I-Twilio-Idempotency-Token`. Twilio's Calls resource does not promise to
    place one call for a repeated key, so the adapter does not declare
    `idempotent_dials`: a dial whose answer never came is not sent again. The carrier's
    callbacks decide instead: `StatusCallback` and `Url` carry our call's id, so the
    first callback (`initiated`, asked for with `StatusCallbackEvent`, within moments of
    the carrier placing the call) binds the carrier's sid to the call, and its end
    (busy, no-answer, completed…) ends it; a request the carrier never got has no
    callbacks, and its attempt ends `failed` after the call's grant (docs/operations.md,
    "Outbound campaigns")."""

    capabilities = Capabilities(idempotent_dials=False, transfer=True, machine_detection=True, hang_up=True,
                                warm_transfer=True)

    def _request(self, path: str, form: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> Any:
        """A POST of `form` (a GET without one) to `path` under the account (`/Calls.json`;
        `.json`: the account itself): its JSON answer."""
        assert self.carrier is not None
        credentials = credentials_of(self.carrier)
        token, account = credentials.get("auth_token", ""), credentials.get("account_sid", "")
        if not token:
            raise CarrierError("The carrier's auth token cannot be opened (was CARRIER_SIGNING_KEY changed?).")
        url = f"{credentials.get('api_base') or API_BASE}/2010-04-01/Accounts/{account}{path}"
        basic = base64.b64encode(f"{account}:{token}".encode()).decode()
        data = urllib.parse.urlencode(form, doseq=True).encode() if form is not None else None
        request = urllib.request.Request(url, data=data, method="POST" if form is not None else "GET", headers={
            "Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=settings.VOICE_CARRIER_TIMEOUT_SEC) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            detail = _error_message(exc)
            raise CarrierError(f"{exc.code} {detail}") from None
        except (ConnectionRefusedError, socket.gaierror) as exc:
            raise CarrierError(f"connection failed: {exc}") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (ConnectionRefusedError, socket.gaierror)):
                raise CarrierError(f"connection failed: {exc.reason}") from None
            raise  # a timeout: the carrier may have placed the call, the outcome is unknown

    def dial(self, *, call: Any, options: DialOptions) -> str:
        assert self.carrier is not None
        base = public_base()
        form: dict[str, Any] = {
            "To": call.to_e164, "From": call.from_e164 or self.carrier.caller_id,
            "Url": f"{base}/voice/{NAME}/{self.carrier.pk}/incoming?call={call.pk}",
            "Method": "POST",
            # Our call's id in the callback's URL, as in `Url`: a callback names the call
            # even when the answer to this request never came (a timeout after the
            # carrier placed the call), and `initiated` tells us its sid at once.
            "StatusCallback": f"{base}/voice/{NAME}/{self.carrier.pk}/status?call={call.pk}",
            "StatusCallbackMethod": "POST",
            "StatusCallbackEvent": ["initiated", "completed"],
            "Timeout": str(settings.VOICE_RING_TIMEOUT_SEC),
            "TimeLimit": str(call.max_seconds),
        }
        headers = None
        if options.machine_detection:
            form.update({"MachineDetection": "DetectMessageEnd", "AsyncAmd": "true",
                         "AsyncAmdStatusCallback": form["StatusCallback"], "AsyncAmdStatusCallbackMethod": "POST"})
        if options.idempotency_key:
            headers = {"I-Twilio-Idempotency-Token": options.idempotency_key}
        answer = self._request("/Calls.json", form, headers)
        sid = answer.get("sid") if isinstance(answer, dict) else None
        if not isinstance(sid, str) or not 1 <= len(sid) <= 128:
            raise DialOutcomeUnknown("the carrier's 2xx answer names no call sid")  # its callbacks will
        logger.info("Twilio carrier %s dialled %s for call %s: %s", self.carrier.pk, mask(call.to_e164), call.pk, sid)
        return sid

    def transfer(self, *, carrier_call_id: str, target: str) -> None:
        """Hands the live call over to `target`: its TwiML is replaced by a `<Dial>`
        (which ends our stream; Twilio then dials the person)."""
        self._request(f"/Calls/{carrier_call_id}.json", {"Twiml": twiml_dial(target)})

    def hang_up(self, *, carrier_call_id: str) -> None:
        self._request(f"/Calls/{carrier_call_id}.json", {"Status": "completed"})

    def ring(self, *, call: Any, target: str, transfer_id: int, seconds: int) -> str:
        """Places the call to the person with the Calls resource: when they answer,
        Twilio fetches our `warm` hook (`Url`), which answers the summary and the
        conference; its end without an answer (busy, no-answer, failed, canceled) is
        posted to the same hook (`StatusCallback`). From: our number of the call."""
        assert self.carrier is not None
        base = public_base()
        hook = f"{base}/voice/{NAME}/{self.carrier.pk}/warm?transfer={transfer_id}"
        ours = call.to_e164 if call.direction == "inbound" else call.from_e164
        answer = self._request("/Calls.json", {
            "To": target, "From": ours or self.carrier.caller_id, "Url": hook, "Method": "POST",
            "StatusCallback": f"{hook}&event=status", "StatusCallbackMethod": "POST",
            "Timeout": str(seconds), "TimeLimit": str(max(60, call.max_seconds or 0)),
        })
        sid = answer.get("sid") if isinstance(answer, dict) else None
        if not isinstance(sid, str) or not CALL_ID.fullmatch(sid):
            raise CarrierError("the carrier's answer names no call sid")
        logger.info("Twilio carrier %s rings %s for the warm hand-over of call %s: %s", self.carrier.pk,
                    mask(target), call.pk, sid)
        return sid

    def join(self, *, carrier_call_id: str, room: str) -> None:
        """The caller's TwiML is replaced by the conference (which ends our stream); it
        starts only when the person enters it, after the summary."""
        self._request(f"/Calls/{carrier_call_id}.json", {"Twiml": twiml_conference(room, starts=False)})

    def ring_cancel(self, *, leg_id: str) -> None:
        self._request(f"/Calls/{leg_id}.json", {"Status": "canceled"})

    def machine_answer(self, *, carrier_call_id: str, message: str = "") -> None:
        """An answering machine took the call: its TwiML is replaced by `message` (if
        any) and a hang-up, which ends our stream."""
        self._request(f"/Calls/{carrier_call_id}.json", {"Twiml": twiml_machine_answer(message)})

    def probe(self) -> Probe:
        """Reads the account (`GET …/Accounts/<sid>.json`): the credentials work."""
        try:
            self._request(".json")
        except (CarrierError, OSError) as exc:
            return Probe(usable=False, detail=str(exc)[:200])
        return Probe(usable=True)


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read()[:4096] or b"{}")
        return str(body.get("message") or body.get("detail") or exc.reason)[:200]
    except (ValueError, AttributeError, OSError):
        return str(exc.reason)[:200]


KIND = CarrierKind(
    name=NAME, label="Twilio-kompatibel (Media Streams)", credentials=CREDENTIALS, adapter=TwilioCarrierAdapter,
    webhooks=TwilioWebhooks(), codec=MediaStreamsCodec, transport="twilio", wire=("mulaw", 8000), uses_secret=False,
    sms=True,
    setup="set the number's Voice URL to POST /voice/twilio/{id}/incoming and its status callback to "
          "/voice/twilio/{id}/status (docs/telephony.md)",
)
