"""Writes of the phone calls whose audio our own bridges carry to the voice agent: a
Twilio-compatible carrier's Media Streams and an Asterisk PBX's AudioSocket
(docs/telephony.md).

A phone call is a call like any other: registered with the same cap check (the call's
grant reserved), started when its media reaches the agent (`call.started`), noted and
ended through the same paths as the agent's web calls (`services.call_web_line`,
`call_web_end`), and booked once by the ledger. What is particular to the phone: the
carrier's call id and numbers, a call refused at once for the cap (`rejected`, 0 s),
the carrier's status callbacks (their duration is the billing basis of a call whose
stream ended first), the hand-over to a person, and the recording."""
import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from calls_app import event_sql
from calls_app.carriers import CarrierError, adapter_for
from calls_app.dialing import MachineAnswer, machine_detected
from calls_app.ledger import (
    END_ATTEMPTS,
    _announce,
    _cap_checked,
    _finish,
    _locked,
    _reserve,
    call_seconds_correct,
)
from calls_app.models import Call, Carrier, CarrierEvent, TranscriptEntry
from calls_app.warm_transfers import warm_dialplan_ringing, warm_room
from console.assistants.models import Assistant
from console.db.conflicts import retry_conflicts
from console.numbers.models import PhoneNumber
from console.phone import mask
from console.tenants.models import Tenant

logger = logging.getLogger("calls_app.phone")

# Statuses of a carrier's status callback that end a call (Twilio's names).
ENDING_STATUSES = {"completed": Call.Status.COMPLETED, "busy": Call.Status.BUSY, "no-answer": Call.Status.NO_ANSWER,
                   "failed": Call.Status.FAILED, "canceled": Call.Status.CANCELED}
# The system note of a hand-over (German, like the rest of the transcript the tenant reads).
TRANSFER_NOTE = "Weitergeleitet an {target}"


# --- Reads the bridges need ------------------------------------------------------------------

def phone_carrier(*, carrier_id: str, kind: str) -> Carrier | None:
    """The carrier `carrier_id` if it is of `kind`, else None."""
    return Carrier.objects.filter(pk=carrier_id, kind=kind).first()


def number_route(*, e164: str) -> PhoneNumber | None:
    """The phone number `e164` with its tenant and assistant, or None when no tenant owns it."""
    return PhoneNumber.objects.select_related("tenant", "assistant").filter(e164=e164).first()


def phone_call_of(*, carrier: Carrier, carrier_call_id: str) -> Call | None:
    return Call.objects.select_related("tenant").filter(carrier=carrier, carrier_call_id=carrier_call_id).first()


def outbound_call_of(*, carrier: Carrier, call_id: str) -> Call | None:
    """An outbound call this carrier was asked to dial (its stream answers the callee)."""
    return Call.objects.select_related("tenant").filter(
        pk=call_id, carrier=carrier, direction=Call.Direction.OUTBOUND).first()


# --- Registration -----------------------------------------------------------------------------

@transaction.atomic
def call_request_phone(*, carrier: Carrier, tenant: Tenant, carrier_call_id: str, from_e164: str, to_e164: str,
                       assistant: Assistant | None = None, now: datetime | None = None) -> Call:
    """An inbound phone call: the tenant's cap checked and the call's grant reserved as
    for an outbound call (MinuteCapReached, 402, when nothing is left), then the call
    (`queued` until its media reaches the agent). `assistant` (the number's, or the
    tenant's first, as its effective config: console.assistants.selectors
    .assistant_answering) answers it: its version is recorded, its tools and analysis
    apply, as on a web call."""
    counter, minutes = _cap_checked(tenant, now or timezone.now())
    call = Call.objects.create(
        tenant=tenant, carrier=carrier, carrier_call_id=carrier_call_id, direction=Call.Direction.INBOUND,
        from_e164=from_e164, to_e164=to_e164, assistant=assistant, status=Call.Status.QUEUED,
        assistant_version=assistant.version if assistant is not None else None,
        reserved_minutes=minutes,
        reserved_period=counter.period, max_seconds=60 * minutes, recording_enabled=tenant.recording_enabled,
        transcription_enabled=tenant.transcription_enabled,
    )
    _reserve(counter, minutes)
    return call


@transaction.atomic
def call_reject_phone(*, carrier: Carrier, tenant: Tenant, carrier_call_id: str, from_e164: str, to_e164: str,
                      assistant: Assistant | None = None, now: datetime | None = None) -> Call:
    """A phone call refused at once because the tenant's minutes are used up: recorded
    as `rejected` with 0 seconds (booked like every end, `call.ended` announced)."""
    now = now or timezone.now()
    call = Call.objects.create(
        tenant=tenant, carrier=carrier, carrier_call_id=carrier_call_id, direction=Call.Direction.INBOUND,
        from_e164=from_e164, to_e164=to_e164, assistant=assistant, status=Call.Status.QUEUED,
        assistant_version=assistant.version if assistant is not None else None,
        recording_enabled=False, transcription_enabled=tenant.transcription_enabled,
    )
    _finish(call, status=Call.Status.REJECTED, seconds=0, ended_at=now, recording_url="")
    return call


@transaction.atomic
def call_phone_start(*, call_id: str, carrier_call_id: str | None = None, now: datetime | None = None) -> None:
    """The call's media reached the agent: active from now on, its owner's first
    heartbeat now, `call.started` announced (once). An outbound call learns its
    carrier call id here if the dial's answer has not stored it yet."""
    now = now or timezone.now()
    call = _locked(Call.objects.select_related("tenant")).filter(pk=call_id).first()
    if call is None or call.started_at is not None or call.is_ended:
        return
    call.started_at, call.status, call.heartbeat_at = now, Call.Status.ACTIVE, now
    fields = ["started_at", "status", "heartbeat_at"]
    if carrier_call_id and not call.carrier_call_id:
        call.carrier_call_id = carrier_call_id
        fields.append("carrier_call_id")
    call.save(update_fields=fields)
    _announce(call, "call.started")


# --- The carrier's status callbacks -----------------------------------------------------------

@retry_conflicts(attempts=END_ATTEMPTS)
@transaction.atomic
def call_phone_status(*, carrier: Carrier, carrier_call_id: str, status: str, seconds: int,
                      now: datetime | None = None) -> str:
    """A carrier's status callback (Twilio's CallStatus and CallDuration): an ending
    status ends the call once; each (call, status) applies once, so the carrier's
    retries change nothing. The carrier's duration is the billing basis: a call our
    stream had ended already (booked with the seconds our side saw) is booked again with
    the carrier's seconds (the usage corrected by the difference, never counted twice);
    a call handed over to a person keeps its seconds up to the hand-over. Returns
    "applied", "duplicate", "ignored" (a status that ends nothing) or "unknown_call"."""
    ended_status = ENDING_STATUSES.get(status)
    if ended_status is None:
        return "ignored"
    now = now or timezone.now()
    event_sql.lock_call_events(carrier.pk, carrier_call_id)
    try:
        with transaction.atomic():
            CarrierEvent.objects.create(
                carrier=carrier, event_id=f"status:{carrier_call_id}:{status}", type="call.status",
                carrier_call_id=carrier_call_id, occurred_at=now, data={"status": status, "seconds": seconds},
                state=CarrierEvent.State.APPLIED)
    except IntegrityError:
        return "duplicate"
    call = _locked(Call.objects.select_related("tenant")).filter(carrier=carrier, carrier_call_id=carrier_call_id).first()
    if call is None:
        logger.warning("Status %s from carrier %s for an unknown call %s", status, carrier.pk, carrier_call_id)
        return "unknown_call"
    if call.max_seconds:
        seconds = min(seconds, call.max_seconds)
    if not call.is_ended:
        if call.started_at is None and seconds:
            call.started_at = now - timedelta(seconds=seconds)
            call.save(update_fields=["started_at"])
        _finish(call, status=ended_status, seconds=seconds, ended_at=now, recording_url=call.recording_url)
    elif status == "completed" and not call.transferred_to and call.started_at is not None and seconds != call.seconds:
        call_seconds_correct(call, seconds)
    return "applied"


# --- Transfer to a person ---------------------------------------------------------------------

@retry_conflicts(attempts=END_ATTEMPTS)
@transaction.atomic
def call_hand_over(*, call_id: str, target: str, label: str = "", now: datetime | None = None) -> Call | None:
    """The agent hands the call over to `target` (E.164): the system note "Weitergeleitet
    an …" (naming `label`, e.g. the assistant's "Zentrale (+49…)", else the number), the
    number kept on the call (an Asterisk dialplan reads it back), and the call ended and
    booked with its seconds up to the hand-over (a warm one an Asterisk dialplan still
    rings for: held until its outcome, see below). Returns the call, or None when it had
    ended already (nothing changes then). Which numbers the assistant may reach is
    checked before (services.call_transfer)."""
    now = now or timezone.now()
    call = _locked(Call.objects.select_related("tenant")).get(pk=call_id)
    if call.is_ended:
        return None
    if call.transcription_enabled and not call.redacted:
        TranscriptEntry.objects.create(call=call, role=TranscriptEntry.Role.SYSTEM,
                                       text=TRANSFER_NOTE.format(target=label or target), ts=now)
    seconds = 0 if call.started_at is None else max(0, round((now - call.started_at).total_seconds()))
    seconds = min(seconds, call.max_seconds or seconds)
    if warm_dialplan_ringing(call=call):
        # An Asterisk dialplan rings the person now: the call is held, not booked, so
        # that the caller can come back to the conversation if nobody answers
        # (calls_app.warm_transfers). Its seconds up to here are kept for the booking
        # (ledger.call_held_book); the heartbeat keeps the orphan sweep off for the ring.
        call.transferred_to, call.seconds = target, seconds
        call.heartbeat_at = now + timedelta(seconds=settings.VOICE_WARM_TRANSFER_RING_SEC)
        call.save(update_fields=["transferred_to", "seconds", "heartbeat_at"])
        logger.info("Call %s held while %s is rung for a warm hand-over", call.pk, mask(target))
        return call
    call.transferred_to = target
    call.save(update_fields=["transferred_to"])
    _finish(call, status=Call.Status.COMPLETED, seconds=seconds, ended_at=now, recording_url=call.recording_url)
    logger.info("Call %s handed over to %s after %s s", call.pk, mask(target), seconds)
    return call


def call_transfer_target(*, call_id: str) -> str:
    """The number the call was handed over to, or ""."""
    return Call.objects.filter(pk=call_id).values_list("transferred_to", flat=True).first() or ""


def carrier_transfer(*, call_id: str, target: str, warm: bool = False) -> None:
    """Asks the carrier of a call to hand it over to `target` (a twilio carrier: its
    REST API); CarrierError when it refuses. `warm`: the person was rung and answered
    (calls_app.warm_transfers): the caller joins them in the hand-over's conference. The
    call is booked afterwards (call_hand_over)."""
    call = Call.objects.get(pk=call_id)
    if not call.carrier_call_id:
        raise CarrierError(f"call {call_id} has no carrier call id to hand over")
    adapter = adapter_for(call.carrier_id)
    if warm:
        adapter.join(carrier_call_id=call.carrier_call_id, room=warm_room(call.pk))
    else:
        adapter.transfer(carrier_call_id=call.carrier_call_id, target=target)


def call_machine_verdict(*, carrier: Carrier, carrier_call_id: str, answered_by: str) -> MachineAnswer | None:
    """A twilio carrier's asynchronous answering-machine verdict (`AnsweredBy`) on an
    outbound call it dialled for us, handed to calls_app.dialing.machine_detected (a
    campaign's listener notes it on its attempt and answers its choice). What the
    carrier should do now, None when the conversation goes on (a person, an unknown
    verdict, or a call that is not ours to decide any more)."""
    call = Call.objects.filter(carrier=carrier, carrier_call_id=carrier_call_id,
                               direction=Call.Direction.OUTBOUND).only("pk", "ended_at").first()
    if call is None or call.is_ended:
        return None
    return machine_detected(call_id=call.pk, answered_by=answered_by[:32])


def carrier_machine_answer(*, carrier: Carrier, carrier_call_id: str, message: str = "") -> None:
    """Tells a twilio carrier what an answering machine gets: `message` said, then the
    hang-up (its REST API; CarrierError when it refuses). The call is booked by the
    status callback that follows, like any end."""
    adapter_for(carrier.pk).machine_answer(carrier_call_id=carrier_call_id, message=message)


@transaction.atomic
def call_outbound_answered(*, call: Call, carrier_call_id: str) -> bool:
    """The callee of an outbound call answered (the carrier fetched our incoming URL for
    it): the call learns its carrier call id if the dial's answer has not stored it yet.
    Whether the call is the carrier's call `carrier_call_id`."""
    Call.objects.filter(pk=call.pk, carrier_call_id__isnull=True).update(carrier_call_id=carrier_call_id)
    return Call.objects.filter(pk=call.pk, carrier_call_id=carrier_call_id).exists()
