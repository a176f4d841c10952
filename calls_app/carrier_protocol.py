"""What a carrier adapter is to the code that dials and controls calls, as types
(calls_app/kinds/base.py says what else a carrier kind declares).

An adapter is made with its Carrier row by the kind (`calls_app.carriers.adapter_for`);
`calls_app.dialing.call_dial` sends it the dials, the phone bridges its hand-overs and
answering-machine answers, the admin's *Verbindung testen* its probe. What it can do is
declared in `capabilities`, never read from attributes by name. Adapters need not
subclass anything (the tests' fakes do not); `calls_app.kinds.base.AdapterBase` refuses
each capability an adapter lacks.
"""
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:
    from calls_app.models import Call


class CarrierError(Exception):
    """Raised by an adapter when the carrier refuses or cannot be reached."""


class DialOutcomeUnknown(Exception):
    """Raised by an adapter whose carrier may have placed the call without telling us
    its id (a 2xx answer without one): like a lost answer, the carrier's callbacks decide."""


@dataclass(frozen=True)
class DialOptions:
    """What travels with a dial besides the call (its numbers and its grant, `max_seconds`).

    - `idempotency_key`: the caller's key of this one dial (a campaign attempt's id). An
      adapter whose capabilities say `idempotent_dials` sends it with the carrier's
      request, so that the same dial sent again (after a timeout that left the answer
      unknown, or by another worker after this one died mid-request) places no second
      call: the carrier answers the first call's id.
    - `machine_detection`: ask the carrier for answering-machine detection; its verdict
      comes back through calls_app.dialing.machine_detected.
    - `repeat`: the same dial sent again (its first answer never came)."""

    idempotency_key: str = ""
    machine_detection: bool = False
    repeat: bool = False


@dataclass(frozen=True)
class Capabilities:
    """What an adapter can do; the runtime asks these, never the adapter's attributes.

    `idempotent_dials`: the same dial sent again (same key) places no second call, so a
    dial whose answer never came may be sent again. `transfer`: a live call can be
    handed over to a person by the carrier. `machine_detection`: the carrier tells a
    machine from a person and takes `machine_answer`. `hang_up`: the carrier ends a call
    when asked. `warm_transfer`: the carrier rings a person for a live call (`ring`,
    the person hears the summary first) and joins the caller to them after it (`join`):
    a warm hand-over (docs/telephony.md, "Warm transfer"); without it transfer_call's
    warm mode is a plain hand-over (an Asterisk dialplan does its own; a SIP trunk's
    ring is placed and joined by the SIP agent, which bridges the two calls itself)."""

    idempotent_dials: bool = False
    transfer: bool = False
    warm_transfer: bool = False
    machine_detection: bool = False
    hang_up: bool = False


@dataclass(frozen=True)
class Probe:
    """The answer of `CarrierAdapter.probe`: whether the carrier can be used now, and why not."""

    usable: bool
    detail: str = ""


class CarrierAdapter(Protocol):
    """How the runtime reaches a carrier (made with its Carrier row)."""

    capabilities: ClassVar[Capabilities]

    def dial(self, *, call: "Call", options: DialOptions) -> str:
        """Places `call` (at most `call.max_seconds` long): the carrier's call id.
        CarrierError when the carrier refused (nothing was placed); any other exception
        leaves the outcome unknown."""
        ...

    def transfer(self, *, carrier_call_id: str, target: str) -> None:
        """Hands the live call over to `target` (E.164); CarrierError when refused."""
        ...

    def hang_up(self, *, carrier_call_id: str) -> None:
        """Ends the live call; CarrierError when refused."""
        ...

    def ring(self, *, call: "Call", target: str, transfer_id: int, seconds: int) -> str:
        """Rings `target` (E.164) for the live `call`'s warm hand-over `transfer_id` for
        at most `seconds`: the carrier's id of that second call. When the person answers,
        the carrier asks the kind's `warm` hook what to say; CarrierError when refused."""
        ...

    def join(self, *, carrier_call_id: str, room: str) -> None:
        """Moves the live call into `room`, where the person rung by `ring` is (or will
        be after the summary); CarrierError when refused."""
        ...

    def ring_cancel(self, *, leg_id: str) -> None:
        """Stops ringing the second call `leg_id` (nobody answered in time)."""
        ...

    def machine_answer(self, *, carrier_call_id: str, message: str = "") -> None:
        """An answering machine took the call: `message` (if any) said, then the hang-up."""
        ...

    def probe(self) -> Probe:
        """Whether the carrier answers with these credentials (bounded by the carrier timeout)."""
        ...
