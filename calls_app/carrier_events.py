"""Carrier events (`POST /voice/webhook/<carrier_id>`, CONTRACT §5): verified, parsed,
applied once by event id, kept pending until their call.started."""
import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, models, transaction

from calls_app import event_sql, redaction
from calls_app import events as ev
from calls_app.errors import UnknownCall, UnknownCarrier, UnknownNumber
from calls_app.ledger import END_ATTEMPTS, _announce, _finish, _locked
from calls_app.models import Call, Carrier, CarrierEvent, TranscriptEntry
from calls_app.signing import secret_of, verify_signature
from console.db.conflicts import retry_conflicts
from console.errors import ValidationFailed
from console.numbers.models import PhoneNumber
from console.phone import mask

logger = logging.getLogger("calls_app.webhook")


# --- Carrier events ---------------------------------------------------------------------

@dataclass(frozen=True)
class EventOutcome:
    status: int
    state: str  # "applied", "pending" or "duplicate"

    @property
    def body(self) -> dict[str, Any]:
        return {"received": True, "state": self.state}


APPLIED = EventOutcome(200, CarrierEvent.State.APPLIED)
PENDING = EventOutcome(202, CarrierEvent.State.PENDING)


def event_receive(*, carrier_id: str, raw_body: bytes, signature: str | None,
                  now: datetime | None = None) -> EventOutcome:
    """Verifies, parses and applies one signed carrier event (CONTRACT §5).

    Idempotent by event id; events of a call whose call.started has not arrived are
    kept pending and applied when it does. All of it in one transaction: an error
    (e.g. 404 for an inbound number no tenant owns) stores nothing.

    The carrier's nonce is read on every event (one primary-key read) and its secret
    derived once per (carrier, nonce), so a rotated secret is refused at once."""
    nonce = event_sql.carrier_nonce(carrier_id)
    if nonce is None:
        raise UnknownCarrier()
    verify_signature(secret_of(carrier_id, nonce), signature, raw_body, now=now)
    event = ev.parse_event(raw_body)
    if event.type == ev.TRANSCRIPT:
        outcome = _transcript_receive(carrier_id, event)
        if outcome is not None:
            return outcome
    return _event_receive(carrier_id, event)


def _transcript_receive(carrier_id: str, event: ev.Event) -> EventOutcome | None:
    """The hot path: a transcript line of a call that has started, in hand-written SQL
    (calls_app.event_sql). None when the call has not started (or is unknown): then
    the general path decides under the write lock whether the event waits.

    The call is read before the write transaction: a call that started stays started,
    so the answer cannot go stale, and SQLite's single write lock is held only for the
    two inserts."""
    call = event_sql.started_call(carrier_id, event.carrier_call_id)
    if call is None:
        return None
    call_id, keeps_text = call
    # The call keeps the switch that applied when it started (CONTRACT §5); the stored
    # event keeps the text only where the call does (calls_app.redaction).
    stored = event if keeps_text else replace(event, data=redaction.stripped(event.type, event.data, keep_text=False))
    # Statements and parameters are ready before BEGIN: the write lock is held for the
    # inserts alone.
    event_insert = event_sql.event_insert(carrier_id=carrier_id, event=stored, state=CarrierEvent.State.APPLIED)
    entry_insert = event_sql.transcript_entry_insert(
        call_id=call_id, role=event.data["role"], text=event.data["text"], ts=datetime.fromisoformat(event.data["ts"])
    ) if keeps_text else None
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(*event_insert)
        if cursor.rowcount != 1:  # a known id: nothing was inserted
            return _known_event(event_sql.event_state(cursor, carrier_id=carrier_id, event_id=event.id))
        if entry_insert is not None:
            cursor.execute(*entry_insert)
            if cursor.rowcount != 1:
                # The call was redacted (erased) since it was read: no line, and the
                # event keeps no text either.
                CarrierEvent.objects.filter(carrier_id=carrier_id, event_id=event.id).update(
                    data=redaction.stripped(event.type, event.data, keep_text=False))
    return APPLIED


def _known_event(state: str) -> EventOutcome:
    """Carriers retry: a known id changes nothing."""
    return PENDING if state == CarrierEvent.State.PENDING else EventOutcome(200, "duplicate")


@retry_conflicts(attempts=END_ATTEMPTS)
def _event_receive(carrier_id: str, event: ev.Event) -> EventOutcome:
    """The general path, one transaction; run again when the database aborts it for a
    deadlock (the carrier would otherwise get a 500 and have to retry itself)."""
    carrier = _one(Carrier.objects.filter(pk=carrier_id))
    if carrier is None:  # deleted since its nonce was read
        raise UnknownCarrier()
    with transaction.atomic():
        event_sql.lock_call_events(carrier.pk, event.carrier_call_id)
        try:
            with transaction.atomic():
                record = CarrierEvent.objects.create(
                    carrier=carrier, event_id=event.id, type=event.type, carrier_call_id=event.carrier_call_id,
                    occurred_at=event.occurred_at, data=event.data, state=CarrierEvent.State.APPLIED,
                )
        except IntegrityError:
            state = CarrierEvent.objects.filter(carrier=carrier, event_id=event.id).values_list("state", flat=True).get()
            return _known_event(state)
        outcome, call = _apply(carrier, event)
        if outcome is PENDING:
            record.state = CarrierEvent.State.PENDING
            record.save(update_fields=["state"])
            return PENDING
        _keep_only_what_the_call_keeps(record, call)
    return APPLIED


def _apply(carrier: Carrier, event: ev.Event) -> tuple[EventOutcome, Call | None]:
    """(APPLIED or PENDING, the event's call or None)."""
    if event.type == ev.STARTED:
        call = _call_start(carrier, event)
        _apply_pending(carrier, call)
        return APPLIED, call
    # Locked, so that an erasure of the call waits for this event or this event sees it.
    call = _one(_locked(Call.objects.filter(carrier=carrier, carrier_call_id=event.carrier_call_id)))
    if call is None or not _applicable(call, event):
        return PENDING, call
    _apply_to_call(call, event.type, event.data, event.occurred_at)
    return APPLIED, call


def _keep_only_what_the_call_keeps(record: CarrierEvent, call: Call | None) -> None:
    """The stored event after it was applied to `call`: without the text, recording
    link or numbers that the call does not keep (calls_app.redaction)."""
    kept = redaction.kept_of_call(record.type, record.data, call)
    if kept != record.data:
        record.data = kept
        record.save(update_fields=["data"])


def _one(queryset: models.QuerySet[Any]) -> Any:
    """The row of a unique lookup, or None (no ORDER BY/LIMIT as with .first(): hot path)."""
    try:
        return queryset.get()
    except queryset.model.DoesNotExist:
        return None


def _applicable(call: Call, event: ev.Event) -> bool:
    if call.started_at is not None or call.is_ended:
        return True
    # A dialled call that never connected ends without a call.started (busy,
    # no answer); one that lasted seconds did start, so its end waits for the start.
    return event.type == ev.ENDED and event.data["seconds"] == 0


def _call_start(carrier: Carrier, event: ev.Event) -> Call:
    data = event.data
    if data["direction"] == "inbound":
        return _inbound_start(carrier, event)
    call = _locked(Call.objects.select_related("tenant")).filter(
        pk=data["callId"], carrier=carrier, direction=Call.Direction.OUTBOUND
    ).first()
    if call is None:
        raise UnknownCall(details={"callId": data["callId"]})
    if call.carrier_call_id not in (None, event.carrier_call_id):
        raise ValidationFailed.field("data.carrierCallId", "Does not match the carrier call id of the dialled call.")
    if call.started_at is None and not call.is_ended:
        call.carrier_call_id = event.carrier_call_id
        call.started_at = event.occurred_at
        call.status = Call.Status.ACTIVE
        call.save(update_fields=["carrier_call_id", "started_at", "status"])
        _announce(call, "call.started")
    return call


def _inbound_start(carrier: Carrier, event: ev.Event) -> Call:
    data = event.data
    existing = Call.objects.select_related("tenant").filter(carrier=carrier, carrier_call_id=event.carrier_call_id).first()
    if existing is not None:
        return existing  # a second call.started under another event id
    number = PhoneNumber.objects.select_related("tenant").filter(e164=data["to"]).first()
    if number is None:
        # Never stored under a guessed tenant; the carrier sees a 404 and operators the
        # log, which shows numbers masked (docs/privacy.md).
        logger.warning("call.started from carrier %s for %s, which no tenant owns (event %s)",
                       carrier.pk, mask(data["to"]), event.id)
        raise UnknownNumber(details={"to": data["to"]})
    tenant = number.tenant
    # A call that took place before its caller's data was erased, reported late: it is
    # stored as the erasure left the caller's other calls.
    pseudonym = redaction.erased_caller_pseudonym(tenant=tenant, e164=data["from"], occurred_at=event.occurred_at)
    call = Call.objects.create(
        tenant=tenant, carrier=carrier, carrier_call_id=event.carrier_call_id, direction=Call.Direction.INBOUND,
        from_e164=pseudonym or data["from"], to_e164=data["to"], status=Call.Status.ACTIVE,
        assistant_id=number.assistant_id, started_at=event.occurred_at, recording_enabled=tenant.recording_enabled,
        transcription_enabled=tenant.transcription_enabled, redacted=pseudonym is not None,
    )
    _announce(call, "call.started")
    return call


def _apply_pending(carrier: Carrier, call: Call) -> None:
    pending = list(
        CarrierEvent.objects.filter(carrier=carrier, carrier_call_id=call.carrier_call_id,
                                    state=CarrierEvent.State.PENDING).order_by("occurred_at", "id")
    )
    for record in pending:
        _apply_to_call(call, record.type, record.data, record.occurred_at)
    if pending:
        CarrierEvent.objects.filter(pk__in=[r.pk for r in pending]).update(state=CarrierEvent.State.APPLIED)
    for record in pending:
        _keep_only_what_the_call_keeps(record, call)


def _apply_to_call(call: Call, event_type: str, data: dict[str, Any], occurred_at: datetime) -> None:
    if event_type == ev.TRANSCRIPT:
        # The call keeps the switch that applied when it started (CONTRACT §5); a
        # redacted call takes no more content.
        if call.transcription_enabled and not call.redacted:
            TranscriptEntry.objects.create(
                call=call, role=data["role"], text=data["text"], ts=datetime.fromisoformat(data["ts"])
            )
    elif event_type == ev.DISCLOSED:
        if not call.disclosed:
            call.disclosed = True
            Call.objects.filter(pk=call.pk).update(disclosed=True)
    elif event_type == ev.ENDED:
        _call_end(call, data, occurred_at)


def _call_end(call: Call, data: dict[str, Any], occurred_at: datetime) -> None:
    call = _locked(Call.objects.select_related("tenant")).get(pk=call.pk)
    if call.is_ended:
        return  # a second call.ended under another event id: usage is counted once
    recording_url = data["recordingUrl"] if call.recording_enabled and not call.redacted else ""
    _finish(call, status=data["status"], seconds=data["seconds"], ended_at=occurred_at, recording_url=recording_url)


