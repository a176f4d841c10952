"""Dials that carry more than `services.call_dial` sends, and the carrier's answer to
them: the seam between the features that dial in bulk (campaigns_app, a layer above)
and the carrier adapters (calls_app/carriers.py; the telephony issue's REST carriers).

`DialOptions` travel with the dial to an adapter that declares `dial_options = True`:

- `idempotency_key`: the caller's key of this one dial (a campaign attempt's id). An
  adapter that declares `idempotent_dials = True` sends it with the carrier's request
  (a REST carrier as an `Idempotency-Key` header), so that the same dial sent again —
  after a timeout that left the answer unknown, or by another worker after this one
  died mid-request — places no second call: the carrier answers the first call's id.
  The sim carrier keeps one dial per call, which is the same for it.
- `machine_detection`: ask the carrier for answering-machine detection (Twilio's
  `MachineDetection=DetectMessageEnd` with `AsyncAmd=true`). Its verdict comes back
  through `machine_detected`, which asks the registered listeners what the carrier
  should do (hang up, or leave a message: a touchpoint to speak after the beep).

An adapter without `dial_options` is dialled as by `call_dial`, and never sent the
same dial twice (nothing tells it the request is a repeat).
"""
import logging
from dataclasses import dataclass
from typing import Protocol

from django.db import transaction

from calls_app.carrier_protocol import CarrierAdapter
from calls_app.carriers import CarrierError, CarrierUnavailable, adapter_for
from calls_app.models import Call

logger = logging.getLogger("calls_app.dialing")


@dataclass(frozen=True)
class DialOptions:
    idempotency_key: str = ""
    machine_detection: bool = False
    # The same dial sent again (its first answer never came); a carrier that honours
    # keys needs no hint, the sim carrier looks up its record only then.
    repeat: bool = False


def adapter_of(call: Call) -> CarrierAdapter:
    return adapter_for(call.carrier_id)


def dials_idempotently(adapter: CarrierAdapter) -> bool:
    """Whether `adapter` may be sent a dial again with the same key (it places one call)."""
    return bool(getattr(adapter, "dial_options", False) and getattr(adapter, "idempotent_dials", False))


def call_dial_with(*, call: Call, options: DialOptions) -> Call:
    """`services.call_dial` with `options`: the call's carrier dials it with the granted
    time limit. A carrier that refuses (CarrierError) fails the call and releases its
    minutes (CarrierUnavailable); any other exception leaves the outcome unknown and
    propagates (the carrier may have placed the call; its events still apply)."""
    from calls_app.services import call_fail_undialled

    try:
        adapter = adapter_of(call)
    except CarrierUnavailable:
        # No adapter dials through this carrier (an Asterisk PBX only registers the calls
        # it receives): nothing was placed, the call fails and its minutes are released.
        logger.warning("Carrier %s has no outbound adapter; call %s not dialled", call.carrier_id, call.pk)
        call_fail_undialled(call=call)
        raise
    assert call.max_seconds is not None  # an outbound call's grant is set when it is requested
    try:
        if getattr(adapter, "dial_options", False):
            carrier_call_id = adapter.dial(call=call, max_seconds=call.max_seconds, options=options)
        else:
            carrier_call_id = adapter.dial(call=call, max_seconds=call.max_seconds)
    except CarrierError as exc:
        logger.warning("Carrier %s refused call %s: %s", call.carrier_id, call.pk, exc)
        call_fail_undialled(call=call)
        raise CarrierUnavailable() from None
    with transaction.atomic():
        # A fast carrier may have reported call.started (with the same id) already.
        Call.objects.filter(pk=call.pk, carrier_call_id__isnull=True).update(carrier_call_id=carrier_call_id)
    call.carrier_call_id = carrier_call_id
    return call


# --- Answering-machine detection --------------------------------------------------------

@dataclass(frozen=True)
class MachineAnswer:
    """What the carrier does when a machine answered: hang up, or speak `touchpoint`
    (with `variables`) after the beep, then hang up."""

    hang_up: bool
    touchpoint: str = ""
    variables: dict[str, str] | None = None


HUMAN_VERDICTS = ("human", "unknown")


class MachineListener(Protocol):
    def __call__(self, *, call: Call, answered_by: str) -> MachineAnswer | None: ...


_machine_listeners: list[MachineListener] = []


def register_machine_listener(listener: MachineListener) -> None:
    """`listener(*, call, answered_by)` → a MachineAnswer if the call is its (e.g. a
    campaign's attempt), else None. Registered by the apps above in AppConfig.ready()."""
    if listener not in _machine_listeners:
        _machine_listeners.append(listener)


def machine_detected(*, call_id: str, answered_by: str) -> MachineAnswer | None:
    """The carrier's asynchronous verdict on who answered `call_id` (Twilio's
    `AnsweredBy`: human, machine_start, machine_end_beep, machine_end_silence,
    machine_end_other, fax, unknown). Returns what the carrier should do now: the first
    listener's answer; with none, a machine is hung up on and a human is talked to
    (None)."""
    call = Call.objects.select_related("tenant").filter(pk=call_id).first()
    if call is None:
        return None
    for listener in _machine_listeners:
        answer = listener(call=call, answered_by=answered_by)
        if answer is not None:
            return answer
    return None if answered_by in HUMAN_VERDICTS else MachineAnswer(hang_up=True)
