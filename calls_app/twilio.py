"""Twilio-compatible carriers (Twilio itself; Telnyx and others speak the same protocol):
the signature of their webhooks, the TwiML we answer with, and their REST API's Calls
resource, through which outbound calls are placed and calls are handed over.

The `twilio` package is the reference where it serves: its `RequestValidator` checks
`X-Twilio-Signature` exactly as Twilio computes it (HMAC-SHA1 over the full public URL
and the sorted form parameters, base64), its TwiML builder writes the answers. The REST
calls are two form posts, written out here so that `api_base` (Twilio's host by
default, a fake server on loopback in the tests) is the only thing that differs."""
import base64
import json
import logging
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING

from django.conf import settings
from twilio.request_validator import RequestValidator
from twilio.twiml.voice_response import Connect, Dial, VoiceResponse

from calls_app.carriers import CarrierError
from calls_app.models import Call
from calls_app.signing import unseal
from console.phone import mask

if TYPE_CHECKING:  # dialing imports the carriers, which name this adapter
    from calls_app.dialing import DialOptions

logger = logging.getLogger("calls_app.phone")

SIGNATURE_HEADER = "X-Twilio-Signature"
# What a caller hears when the tenant's minutes are used up (then the call is hung up).
CAP_NOTICE = ("Leider können wir Ihren Anruf im Moment nicht entgegennehmen, weil das Gesprächskontingent "
              "erschöpft ist. Bitte versuchen Sie es später noch einmal. Auf Wiederhören.")


class PublicUrlMissing(CarrierError):
    pass


def public_base(request=None):
    """Where the carrier reaches this service: VOICE_PUBLIC_BASE_URL behind a proxy (the
    scheme and host the carrier signs), else the request's own."""
    base = settings.VOICE_PUBLIC_BASE_URL.rstrip("/")
    if base:
        return base
    if request is not None:
        return request.build_absolute_uri("/").rstrip("/")
    raise PublicUrlMissing("VOICE_PUBLIC_BASE_URL is not set: the carrier cannot be told where to reach us.")


def stream_url(carrier_id, request=None):
    """The Media Streams WebSocket of the carrier: on AGENT_WS_URL where the agent's
    WebSockets are served apart (make run: a port of their own), else on the public
    host with ws(s) for http(s)."""
    base = settings.AGENT_WS_URL.rstrip("/")
    if not base:
        http_base = public_base(request)
        base = "wss" + http_base[5:] if http_base.startswith("https") else "ws" + http_base[4:]
    return f"{base}/voice/twilio/{carrier_id}/stream"


def signature_valid(carrier, request):
    """Whether the request carries the signature the carrier's auth token makes of the
    full public URL and the form parameters."""
    signature = request.headers.get(SIGNATURE_HEADER, "")
    token = unseal(carrier.auth_token_sealed)
    if not signature or not token or len(signature) > 200:
        return False
    url = public_base(request) + request.get_full_path()
    return RequestValidator(token).validate(url, request.POST, signature)


# --- TwiML answers --------------------------------------------------------------------

def twiml_stream(carrier_id, token, request=None):
    """Connect the call to our Media Streams WebSocket, the single-use token as the
    stream's custom parameter (Twilio hands it back in the stream's `start`)."""
    response = VoiceResponse()
    connect = Connect()
    stream = connect.stream(url=stream_url(carrier_id, request))
    stream.parameter(name="token", value=token)
    response.append(connect)
    return str(response)


def twiml_reject():
    response = VoiceResponse()
    response.reject()
    return str(response)


def twiml_cap_notice():
    response = VoiceResponse()
    response.say(CAP_NOTICE, language="de-DE")
    response.hangup()
    return str(response)


def twiml_dial(target):
    response = VoiceResponse()
    response.append(Dial(target))
    return str(response)


def twiml_machine_answer(message=""):
    """What an answering machine gets: `message` (a campaign's voicemail) said after the
    beep, then the hang-up."""
    response = VoiceResponse()
    if message:
        response.say(message, language="de-DE")
    response.hangup()
    return str(response)


# --- The REST API ---------------------------------------------------------------------

class TwilioCarrierAdapter:
    """Outbound calls and hand-overs through a twilio carrier's REST API.

    `dial` creates the call with Twilio's Calls resource: `Url` is our incoming webhook
    (the same stream then serves the callee), `StatusCallback` our status webhook,
    `TimeLimit` the call's grant. It takes the `DialOptions` of calls_app.dialing (the
    campaigns' dials): `machine_detection` asks for asynchronous answering-machine
    detection (`MachineDetection=DetectMessageEnd`, `AsyncAmd=true`, the verdict posted
    to the status webhook), `idempotency_key` is sent as `I-Twilio-Idempotency-Token`.
    Twilio's Calls resource does not promise to place one call for a repeated key, so
    the adapter does not declare `idempotent_dials`: a dial whose answer never came is
    not sent again. The carrier's callbacks decide instead: `StatusCallback` and `Url`
    carry our call's id, so the first callback (`initiated`, asked for with
    `StatusCallbackEvent`, within moments of the carrier placing the call) binds the
    carrier's sid to the call, and its end (busy, no-answer, completed…) ends it; a
    request the carrier never got has no callbacks, and its attempt ends `failed`
    after the call's grant (docs/operations.md, "Outbound campaigns")."""

    name = "Twilio-compatible carrier"
    dial_options = True
    idempotent_dials = False

    def __init__(self, carrier):
        self.carrier = carrier

    def _post(self, path, form, headers=None):
        carrier = self.carrier
        token = unseal(carrier.auth_token_sealed)
        if not token:
            raise CarrierError("The carrier's auth token cannot be opened (was CARRIER_SIGNING_KEY changed?).")
        url = f"{carrier.api_base}/2010-04-01/Accounts/{carrier.account_sid}/{path}"
        credentials = base64.b64encode(f"{carrier.account_sid}:{token}".encode()).decode()
        request = urllib.request.Request(url, data=urllib.parse.urlencode(form, doseq=True).encode(), method="POST", headers={
            "Authorization": f"Basic {credentials}", "Content-Type": "application/x-www-form-urlencoded",
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

    def dial(self, *, call: Call, max_seconds: int, options: "DialOptions | None" = None) -> str:
        base = public_base()
        form = {
            "To": call.to_e164, "From": call.from_e164 or self.carrier.caller_id,
            "Url": f"{base}/voice/twilio/{self.carrier.pk}/incoming?call={call.pk}",
            "Method": "POST",
            # Our call's id in the callback's URL, as in `Url`: a callback names the call
            # even when the answer to this request never came (a timeout after the
            # carrier placed the call), and `initiated` tells us its sid at once.
            "StatusCallback": f"{base}/voice/twilio/{self.carrier.pk}/status?call={call.pk}",
            "StatusCallbackMethod": "POST",
            "StatusCallbackEvent": ["initiated", "completed"],
            "Timeout": str(settings.VOICE_RING_TIMEOUT_SEC),
            "TimeLimit": str(max_seconds),
        }
        headers = None
        if options is not None and options.machine_detection:
            form.update({"MachineDetection": "DetectMessageEnd", "AsyncAmd": "true",
                         "AsyncAmdStatusCallback": form["StatusCallback"], "AsyncAmdStatusCallbackMethod": "POST"})
        if options is not None and options.idempotency_key:
            headers = {"I-Twilio-Idempotency-Token": options.idempotency_key}
        answer = self._post("Calls.json", form, headers)
        sid = answer.get("sid") if isinstance(answer, dict) else None
        if not isinstance(sid, str) or not 1 <= len(sid) <= 128:
            raise CarrierError("the carrier's answer names no call sid")
        logger.info("Twilio carrier %s dialled %s for call %s: %s", self.carrier.pk, mask(call.to_e164), call.pk, sid)
        return sid

    def transfer(self, *, carrier_call_id: str, target: str) -> None:
        """Hands the live call over to `target`: its TwiML is replaced by a `<Dial>`
        (which ends our stream; Twilio then dials the person)."""
        self._post(f"Calls/{carrier_call_id}.json", {"Twiml": twiml_dial(target)})

    def machine_answer(self, *, carrier_call_id: str, message: str = "") -> None:
        """An answering machine took the call: its TwiML is replaced by `message` (if
        any) and a hang-up, which ends our stream."""
        self._post(f"Calls/{carrier_call_id}.json", {"Twiml": twiml_machine_answer(message)})


def _error_message(exc):
    try:
        body = json.loads(exc.read()[:4096] or b"{}")
        return str(body.get("message") or body.get("detail") or exc.reason)[:200]
    except (ValueError, AttributeError, OSError):
        return str(exc.reason)[:200]
