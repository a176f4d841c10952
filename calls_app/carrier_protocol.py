"""What a carrier adapter is to the code that dials and controls calls, as types.

Adapters need not subclass these: any class with the members fits (the sim carrier,
Twilio's REST API, the tests' fakes). `calls_app.carriers.adapter_for` makes the adapter
of a carrier; `calls_app.dialing` sends it the dials.
"""
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # both import the carriers module, which is typed by this one
    from calls_app.dialing import DialOptions
    from calls_app.models import Call


class CarrierAdapter(Protocol):
    """Dials out through one carrier."""

    # Whether `dial` takes DialOptions (an idempotency key, answering-machine detection).
    dial_options: bool
    # Whether the carrier places one call per idempotency key, so that a dial whose
    # answer never came may be sent again with the same key.
    idempotent_dials: bool

    def dial(self, *, call: "Call", max_seconds: int, options: "DialOptions | None" = None) -> str:
        """Places `call` (at most `max_seconds` long) and returns the carrier's id of it;
        CarrierError when the carrier refuses or cannot be reached, any other exception
        when the answer is unknown (the carrier may have placed the call)."""
        ...


class CallControl(Protocol):
    """Acts on a live call through the carrier's API (a twilio carrier's REST API)."""

    def transfer(self, *, carrier_call_id: str, target: str) -> None:
        """Hands the call over to `target` (E.164); CarrierError when the carrier refuses."""
        ...

    def machine_answer(self, *, carrier_call_id: str, message: str = "") -> None:
        """An answering machine took the call: `message` is said (if any), then the
        carrier hangs up."""
        ...
