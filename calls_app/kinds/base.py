"""What a carrier kind declares (docs/architecture.md, "A carrier is one declaration").

A kind is one module of calls_app/kinds/ that builds one `CarrierKind`:

- `credentials`: the fields of its credentials form (German labels; a secret is never
  shown back). They are stored as one JSON object sealed on `Carrier.credentials_sealed`;
  `create_carrier` and the admin render the same fields.
- `adapter`: how we reach the carrier (dial, transfer, hang up, answer a machine, probe),
  with its `Capabilities` declared instead of attributes looked up by name.
- `webhooks`: how it verifies and answers the HTTP requests it sends us (where it sends
  any): one set of views in agent_app dispatches `/voice/<kind>/<carrier>/…` to them.
- `codec`: the wire of its media stream (a WebSocket of ours), parsed into `MediaEvent`s
  and written back; one consumer in agent_app runs every codec.
- `transport`, `wire`: the agent sessions its calls claim, and their audio format.
- `sms`: whether its carriers send SMS (the messaging provider `carrier`).

A new carrier is one such module and its line in calls_app/kinds/__init__.py; no
migration (the kinds and transports are validated against the registry, not a model's
choices)."""
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from django.http import HttpRequest, HttpResponse

from calls_app.carrier_protocol import Capabilities, CarrierError, DialOptions, Probe
from calls_app.errors import CarrierUnavailable  # noqa: F401 (offered with the adapters)
from console.phone import InvalidPhoneNumber, to_e164

if TYPE_CHECKING:
    from calls_app.models import Call, Carrier


# --- The adapter (its protocol: calls_app/carrier_protocol.py) ---------------------------

class AdapterBase:
    """An adapter that can do nothing but dial: each capability it lacks refuses with a
    CarrierError saying so (never reached when the runtime asks `capabilities` first)."""

    capabilities: ClassVar[Capabilities] = Capabilities()

    def __init__(self, carrier: "Carrier | None" = None) -> None:
        self.carrier = carrier

    def dial(self, *, call: "Call", options: DialOptions) -> str:
        raise CarrierError("this carrier does not dial")

    def transfer(self, *, carrier_call_id: str, target: str) -> None:
        raise CarrierError("this carrier does not hand calls over")

    def hang_up(self, *, carrier_call_id: str) -> None:
        raise CarrierError("this carrier does not end calls when asked")

    def ring(self, *, call: "Call", target: str, transfer_id: int, seconds: int) -> str:
        raise CarrierError("this carrier does not ring a person for a warm hand-over")

    def join(self, *, carrier_call_id: str, room: str) -> None:
        raise CarrierError("this carrier does not join calls")

    def ring_cancel(self, *, leg_id: str) -> None:
        raise CarrierError("this carrier does not ring a person for a warm hand-over")

    def machine_answer(self, *, carrier_call_id: str, message: str = "") -> None:
        raise CarrierError("this carrier does not detect answering machines")

    def probe(self) -> Probe:
        return Probe(usable=True)


# --- Credentials ----------------------------------------------------------------------------

@dataclass(frozen=True)
class CredentialField:
    """One field of a kind's credentials form. `clean` turns the text given into the
    stored value (or raises ValueError with a sentence for the field); a `secret` is
    sealed with the rest and never shown back (not in the admin, not by create_carrier)."""

    name: str
    label: str
    help: str = ""
    secret: bool = False
    required: bool = True
    default: str = ""
    clean: Callable[[str], str] | None = None
    # `flag`: an option without a value (create_carrier's `--static`, stored as "1");
    # `many`: an option taking several values (`--allow A B`, stored comma-separated).
    flag: bool = False
    many: bool = False

    @property
    def option(self) -> str:
        """Its create_carrier option: `--account-sid` for `account_sid`."""
        return "--" + self.name.replace("_", "-")


# --- Webhooks ---------------------------------------------------------------------------------

def caller_e164(raw: str) -> str:
    """A caller's number in E.164, or "" for a withheld or unreadable one (`anonymous`)."""
    try:
        return to_e164(raw) if raw else ""
    except InvalidPhoneNumber:
        return ""


@dataclass(frozen=True)
class InboundCall:
    """A carrier's request that a call reach the agent: the callee of a call we dialled
    (`outbound`, naming our call where the carrier handed its id back), or a call to
    `to_e164` ("" when unreadable) from `from_e164` ("" when withheld)."""

    carrier_call_id: str
    from_e164: str = ""
    to_e164: str = ""
    outbound: bool = False
    outbound_call_id: str = ""
    # The token the carrier will connect with (AudioSocket's UUID: the kind makes it);
    # "" lets agent_app make a random one.
    token: str = ""


@dataclass(frozen=True)
class StatusReport:
    """A carrier's status callback: an ending status ends the call; `answered_by` is an
    answering-machine verdict; `outbound_call_id` names our call where it is ours."""

    carrier_call_id: str
    status: str = ""
    seconds: int = 0
    answered_by: str | None = None
    outbound_call_id: str = ""


@dataclass(frozen=True)
class WarmLeg:
    """The carrier's word on the call to a person for a warm hand-over (`transfer_id`:
    ours): the person answered (`ended` False: say the summary), or the call ended
    without an answer."""

    transfer_id: str
    ended: bool = False


class Webhooks(Protocol):
    """How a kind's carrier talks to us over HTTP: each request is verified (an ApiError
    when it is not the carrier's), read into one of the dataclasses above, and answered
    in the carrier's own language (TwiML, plain text…)."""

    # The paths of its hooks under /voice/<kind>/<carrier>/ by hook: "incoming" (a call
    # for the agent), "status" (status callbacks), "transfer" (a hand-over read back),
    # "warm" (the person rung for a warm hand-over: WarmWebhooks).
    paths: ClassVar[dict[str, str]]
    # The OpenAPI description of each hook (extend_schema's arguments; `query`: the
    # query parameters it accepts).
    schema: ClassVar[dict[str, dict[str, Any]]]
    # Whether a call announced again (the carrier retrying) gets a new token (else
    # `refuse(…, "exists")`).
    reconnects: ClassVar[bool]

    def verify(self, carrier: "Carrier", request: HttpRequest) -> None: ...

    def inbound(self, request: HttpRequest) -> InboundCall: ...

    def status(self, request: HttpRequest) -> StatusReport: ...

    def connect(self, carrier: "Carrier", token: str, request: HttpRequest) -> HttpResponse:
        """The answer that puts the call through to the agent's stream with `token`."""
        ...

    def refuse(self, carrier: "Carrier", inbound: InboundCall, reason: str) -> HttpResponse:
        """The answer to a call that cannot be taken: `reason` is "unknown_number",
        "cap" (the tenant's minutes are used up), "exists" (its id is taken) or "gone"
        (an outbound call that ended or was not ours). May raise the ApiError instead."""
        ...


# --- The media codec --------------------------------------------------------------------------

class CodecError(Exception):
    """A frame that breaks the kind's media protocol: logged, the stream closed."""


@dataclass(frozen=True)
class MediaEvent:
    """One parsed frame: `kind` is "start" (with `stream_id`, `call_id`, `token`,
    `encoding`), "audio" (`audio`), "dtmf" (`digit`, None when unreadable), "mark",
    "stop", "error" (the far end reports one; `audio` holds its bytes) or "ignore" (a
    frame that carries nothing for us)."""

    kind: str
    audio: bytes = b""
    digit: str | None = None
    stream_id: str = ""
    call_id: str = ""
    token: Any = None
    encoding: str = ""


class MediaCodec(Protocol):
    """Parses and writes the wire of a kind's media stream. One codec per connection
    (it may remember the stream's id); `parse` raises CodecError on a broken frame.
    `mark` and `clear` are None where the wire has none (AudioSocket: the listener
    drops what was not sent yet itself)."""

    def parse(self, text: str | None, data: bytes | None) -> MediaEvent: ...

    def audio(self, chunk: bytes) -> list[str] | list[bytes]: ...

    def mark(self, name: str) -> str | bytes | None: ...

    def clear(self) -> str | bytes | None: ...


# --- The kind ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class CarrierKind:
    name: str
    label: str
    credentials: tuple[CredentialField, ...] = ()
    adapter: type[AdapterBase] | None = None
    webhooks: Webhooks | None = None
    codec: Callable[[], MediaCodec] | None = None
    # Whether its media stream is a WebSocket of ours (/voice/<kind>/<carrier>/stream,
    # agent_app/media_stream.py); else the codec serves a listener of its own.
    websocket: bool = True
    # The transport its calls' agent sessions claim, and their wire (encoding, rate).
    transport: str = ""
    wire: tuple[str, int] = ("pcm_s16le", 8000)
    # What create_carrier prints about where the carrier reaches us ({id}: the carrier's).
    setup: str = ""
    # Whether the carrier authenticates with the secret we derive (printed once).
    uses_secret: bool = True
    # A check of the credentials as a whole (fields that need each other): raises
    # ValidationFailed naming the field.
    check: Callable[[dict[str, str]], None] | None = None
    # Whether its PBX's dialplan does a warm hand-over itself (it rings the person, lets
    # them hear the summary over AudioSocket and reports the outcome: the `whisper` and
    # `warm_outcome` hooks) where the kind has no adapter that rings (Capabilities.warm_transfer).
    warm_by_dialplan: bool = False
    # Whether its carriers' accounts send SMS: the Messages API of Twilio's REST wire with
    # the carrier's own `account_sid`, `auth_token` and `api_base`. The messaging provider
    # `carrier` (messaging_app, the default) sends a call's SMS through the call's carrier
    # where its kind says so. A kind, not an adapter's Capabilities: no adapter method is
    # involved, and a kind without an adapter (one that never dials) may send SMS too.
    sms: bool = False


class WarmWebhooks(Webhooks, Protocol):
    """A kind whose carrier rings a person for a warm hand-over (Capabilities.warm_transfer)
    asks its `warm` hook: `warm_leg` reads the request, `warm_answer` answers the person
    (the summary and the hand-over's room, or `gone` said and the call ended)."""

    def warm_leg(self, request: HttpRequest) -> WarmLeg: ...

    def warm_answer(self, *, summary: str | None, room: str, gone: str) -> HttpResponse: ...
