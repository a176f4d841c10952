"""The one dial of a call (`call_dial`) and the carrier's answer to answering machines:
the seam between the features that dial (the API's outbound calls, the callback inbox,
campaigns_app a layer above) and the carriers' adapters (calls_app/kinds).

A dial carries `DialOptions` (calls_app/kinds/base.py): an idempotency key that an
adapter whose capabilities say `idempotent_dials` sends with its request (the same dial
sent again then places no second call), and a request for answering-machine detection,
whose verdict comes back through `machine_detected`, which asks the registered
listeners what the carrier should do (hang up, or leave a message: a touchpoint to
speak after the beep). An adapter without `idempotent_dials` is never sent the same
dial twice.
"""
import logging
from dataclasses import dataclass
from typing import Protocol

from django.db import transaction

from calls_app.carrier_protocol import CarrierAdapter, CarrierError, DialOptions, DialOutcomeUnknown
from calls_app.carriers import CarrierUnavailable, adapter_for
from calls_app.models import Call

logger = logging.getLogger("calls_app.dialing")

def adapter_of(call: Call) -> CarrierAdapter:
    return adapter_for(call.carrier_id)


PLAIN_DIAL = DialOptions()


def call_dial(*, call: Call, options: DialOptions = PLAIN_DIAL) -> Call:
    """Hands the call to its carrier with the granted time limit (`call.max_seconds`)
    and `options`. Runs after the reservation is committed, so a slow carrier never
    holds the counter lock.

    A carrier without an adapter (an Asterisk PBX only registers the calls it receives)
    or one that refuses (CarrierError) fails the call and releases its minutes
    (CarrierUnavailable, 502). Any other exception leaves the outcome unknown and
    propagates (the carrier may have placed the call): the call stays queued, its
    events still apply if they come, and its reservation is released after its granted
    time like any call without call.ended. A carrier that answered without the call's
    id (DialOutcomeUnknown) is that case too, but answered: the call is returned
    queued, and its callbacks bind it."""
    from calls_app.services import call_fail_undialled

    try:
        adapter = adapter_of(call)
    except CarrierUnavailable:
        logger.warning("Carrier %s has no outbound adapter; call %s not dialled", call.carrier_id, call.pk)
        call_fail_undialled(call=call)
        raise
    try:
        carrier_call_id = adapter.dial(call=call, options=options)
    except DialOutcomeUnknown as exc:
        logger.warning("Carrier %s: the dial of call %s left its outcome unknown (%s); its callbacks decide",
                       call.carrier_id, call.pk, exc)
        return call
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
