"""Writes of the voice runtime: carriers, outbound requests with the minute cap, and
carrier events (the only writer of calls)."""
import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone

from calls_app import event_sql, redaction
from calls_app import events as ev
from calls_app.carriers import CarrierError, CarrierUnavailable, adapter_for, outbound_carrier
from calls_app.models import Call, Carrier, CarrierEvent, TranscriptEntry, TurnLatency, UsageCounter
from calls_app.periods import billable_minutes, next_period_start, period_of
from calls_app.signing import carrier_secret, new_nonce, secret_of, verify_signature
from console.assistants.models import Assistant
from console.assistants.services import TransferRefused, assistant_transfer_target_named
from console.db.conflicts import retry_conflicts
from console.errors import ApiError, NotFound, ValidationFailed
from console.jobs.services import job_enqueue_on_commit
from console.numbers.models import PhoneNumber
from console.phone import InvalidPhoneNumber, mask, to_e164
from console.tenants.models import Tenant
from leads_app.models import Lead
from leads_app.preferred_time import from_words
from leads_app.services import lead_callback_revise, lead_create
from webhooks_app.services import event_publish

logger = logging.getLogger("calls_app.webhook")


class MinuteCapReached(ApiError):
    status, code = 402, "minute_cap_reached"
    message = ("The tenant's monthly minute cap is reached; no outbound call can be placed and no voice agent "
               "session granted until it resets.")


class UnknownCarrier(NotFound):
    code, message = "unknown_carrier", "No carrier with this id."


class UnknownNumber(NotFound):
    code, message = "unknown_number", "No tenant owns the called number; the call was not stored."


class UnknownCall(NotFound):
    code, message = "unknown_call", "No outbound call with this callId was dialled through this carrier."


# --- Carriers ---------------------------------------------------------------------------

@transaction.atomic
def carrier_create(*, carrier_id: str, name: str = "", caller_id: str = "") -> tuple[Carrier, str]:
    """A new carrier: returns (Carrier, its secret to show once)."""
    if Carrier.objects.filter(pk=carrier_id).exists():
        raise ValidationFailed.field("id", f"A carrier '{carrier_id}' exists already; use --rotate for a new secret.")
    if caller_id:
        try:
            caller_id = to_e164(caller_id)
        except InvalidPhoneNumber as exc:
            raise ValidationFailed.field("caller_id", str(exc)) from None
    carrier = Carrier(id=carrier_id, name=name, caller_id=caller_id, secret_nonce=new_nonce())
    carrier.full_clean()
    carrier.save()
    return carrier, carrier_secret(carrier)


@transaction.atomic
def carrier_rotate_secret(*, carrier: Carrier) -> str:
    """A new secret for `carrier`; the old one stops working at once."""
    carrier.secret_nonce = new_nonce()
    carrier.secret_rotated_at = timezone.now()
    carrier.save(update_fields=["secret_nonce", "secret_rotated_at"])
    return carrier_secret(carrier)


# --- Row locks --------------------------------------------------------------------------
# One order for every writer of calls and usage (docs/architecture.md, "Row locks"):
#   1. the carrier call's event lock (carrier events only, event_sql.lock_call_events);
#   2. the call's row;
#   3. the tenant's usage counter rows, in period order;
#   4. then only inserts (deliveries, events): their foreign keys take share locks on
#      the tenant and endpoint rows, which nothing of ours locks for update while it
#      waits for a call or a counter.
# A cap check holds a counter before it creates a call (a new row, that nobody waits
# for); the stale-reservation release holds a counter and skips the calls whose rows
# are locked (an end under way releases their minutes itself).

# Attempts of an end that the database aborts for a conflict (console.db.conflicts): an
# end is often the only booking of its call (the agent's, the sweep's) and must not be lost.
END_ATTEMPTS = 5


_Calls = TypeVar("_Calls", bound=models.QuerySet[Call])


def _locked(queryset: _Calls) -> _Calls:
    """`queryset` locking only its own model's rows (FOR UPDATE OF), never the rows its
    select_related joins in: a lock on the tenant's row, held until the commit, made
    every end of the tenant's calls wait for the others and deadlock with the job
    worker's webhook lease (issue 31)."""
    return queryset.select_for_update(of=("self",))


# --- Usage counters ---------------------------------------------------------------------

def _locked_counter(tenant: Tenant, period: str) -> UsageCounter:
    """The counter row of (tenant, period), created if missing and locked until commit.

    On PostgreSQL the row lock serialises cap checks and bookings of one tenant; on
    SQLite the IMMEDIATE transaction already holds the database's write lock."""
    UsageCounter.objects.get_or_create(tenant=tenant, period=period)
    return UsageCounter.objects.select_for_update().get(tenant=tenant, period=period)


def _cap_details(tenant: Tenant, counter: UsageCounter, now: datetime) -> dict[str, Any]:
    return {
        "used": counter.minutes,
        "cap": tenant.minute_cap,
        "reserved": counter.reserved_minutes,
        "remaining": max(0, tenant.minute_cap - counter.minutes - counter.reserved_minutes),
        "resetsAt": next_period_start(now, tenant.time_zone).isoformat().replace("+00:00", "Z"),
    }


# --- Outbound calls ---------------------------------------------------------------------

@transaction.atomic
def call_request_outbound(*, tenant: Tenant, carrier: Carrier, to_e164: str, from_number: str | None = None,
                          lead_id: str = "", now: datetime | None = None) -> Call:
    """Checks the cap and reserves minutes for a new outbound call (status `queued`).

    One transaction holding the tenant's counter row: used + reserved minutes are
    read and the reservation written atomically, so concurrent requests can never
    be granted more than the cap together."""
    counter, minutes = _cap_checked(tenant, now or timezone.now())
    period = counter.period
    caller_id = _caller_id(tenant, carrier, from_number)
    _check_lead(tenant, lead_id)
    call = Call.objects.create(
        tenant=tenant, carrier=carrier, direction=Call.Direction.OUTBOUND, from_e164=caller_id, to_e164=to_e164,
        status=Call.Status.QUEUED, lead_id=lead_id or "", reserved_minutes=minutes, reserved_period=period,
        max_seconds=60 * minutes, recording_enabled=tenant.recording_enabled,
        transcription_enabled=tenant.transcription_enabled,
    )
    _reserve(counter, minutes)
    return call


def _cap_checked(tenant: Tenant, now: datetime) -> tuple[UsageCounter, int]:
    """Under the tenant's counter lock: (counter, minutes to grant), or 402 when the cap
    leaves nothing. Used + reserved minutes are read and the reservation written in one
    transaction, so concurrent requests can never be granted more than the cap together."""
    counter = _locked_counter(tenant, period_of(now, tenant.time_zone))
    _release_stale_reservations(tenant, counter, now)
    details = _cap_details(tenant, counter, now)
    if details["remaining"] == 0:
        raise MinuteCapReached(details=details)
    return counter, min(details["remaining"], tenant.max_call_minutes)


def _reserve(counter: UsageCounter, minutes: int) -> None:
    counter.reserved_minutes += minutes
    counter.save(update_fields=["reserved_minutes", "updated_at"])


# The carrier ends a call at its granted maxSeconds. A reservation still held this
# long after that lost its call.ended (a carrier outage, a dropped webhook): it is
# released so that the minutes are not blocked for the rest of the month. A late
# call.ended still books the real minutes, and releases nothing twice.
RESERVATION_GRACE = timedelta(minutes=15)


def _release_stale_reservations(tenant: Tenant, counter: UsageCounter, now: datetime) -> None:
    """Under the counter's lock: gives back the minutes of this period's calls that
    cannot still be running. Only calls under way are looked at, so it stays cheap."""
    stale = [
        call for call in Call.objects.for_tenant(tenant).filter(
            ended_at__isnull=True, reserved_minutes__gt=0, reserved_period=counter.period,
            created_at__lt=now - RESERVATION_GRACE,
        ).only("pk", "created_at", "max_seconds", "reserved_minutes")
        if call.created_at + timedelta(seconds=call.max_seconds or 0) + RESERVATION_GRACE < now
    ]
    if not stale:
        return
    # The counter is held: a call whose row is locked is being ended (it waits for the
    # counter to release its own minutes), so it is skipped, never waited for (the
    # lock order is call, then counter).
    stale = list(Call.objects.filter(
        pk__in=[call.pk for call in stale], ended_at__isnull=True, reserved_minutes__gt=0,
    ).select_for_update(of=("self",), skip_locked=True).only("pk", "reserved_minutes"))
    if not stale:
        return
    released = sum(call.reserved_minutes for call in stale)
    logger.warning("Releasing %s reserved minutes of %s call(s) of tenant %s without call.ended: %s",
                   released, len(stale), tenant.slug, ", ".join(call.pk for call in stale))
    Call.objects.filter(pk__in=[call.pk for call in stale]).update(reserved_minutes=0)
    counter.reserved_minutes = max(0, counter.reserved_minutes - released)
    counter.save(update_fields=["reserved_minutes", "updated_at"])


def reservations_release_expired(*, now: datetime | None = None) -> int:
    """The periodic job: releases the stale reservations of every tenant that holds any
    this period (a tenant that books no new call would otherwise keep them all month).
    Returns how many counters it looked at."""
    now = now or timezone.now()
    counters = UsageCounter.objects.filter(reserved_minutes__gt=0).select_related("tenant")
    looked_at = 0
    for counter in counters:
        if counter.period != period_of(now, counter.tenant.time_zone):
            continue  # a past month's counter: its calls ended or were released then
        with transaction.atomic():
            _release_stale_reservations(counter.tenant, _locked_counter(counter.tenant, counter.period), now)
        looked_at += 1
    return looked_at


def _caller_id(tenant: Tenant, carrier: Carrier, from_number: str | None) -> str:
    """`from` must be one of the tenant's numbers; by default the first of them, else
    the carrier's own caller id (so a tenant without numbers can still call out)."""
    numbers = PhoneNumber.objects.for_tenant(tenant)
    if from_number is None:
        first = numbers.order_by("e164").values_list("e164", flat=True).first()
        return first or carrier.caller_id
    try:
        e164 = to_e164(from_number)
    except InvalidPhoneNumber as exc:
        raise ValidationFailed.field("from", str(exc)) from None
    if not numbers.filter(e164=e164).exists():
        raise ValidationFailed.field("from", "Calls can only be placed from one of the tenant's own numbers.")
    return e164


def _check_lead(tenant: Tenant, lead_id: str) -> None:
    if lead_id and not Lead.objects.for_tenant(tenant).filter(pk=lead_id).exists():
        # Another tenant's lead answers like one that does not exist.
        raise ValidationFailed.field("leadId", f"No lead '{lead_id}' in this tenant.")


def call_dial(*, call: Call) -> Call:
    """Hands the call to its carrier with the granted time limit. Runs after the
    reservation is committed, so a slow carrier never holds the counter lock.

    A carrier that refuses (CarrierError) fails the call and releases its minutes
    (502). Any other failure leaves the outcome unknown (the carrier may have placed
    the call): the call stays queued, its events still apply if they come, and its
    reservation is released after its granted time like any call without call.ended."""
    try:
        carrier_call_id = adapter_for(call.carrier_id).dial(call=call, max_seconds=call.max_seconds)
    except CarrierError as exc:
        logger.warning("Carrier %s refused call %s: %s", call.carrier_id, call.pk, exc)
        call_fail_undialled(call=call)
        raise CarrierUnavailable() from None
    with transaction.atomic():
        # A fast carrier may have reported call.started (with the same id) already.
        Call.objects.filter(pk=call.pk, carrier_call_id__isnull=True).update(carrier_call_id=carrier_call_id)
    call.carrier_call_id = carrier_call_id
    return call


def call_start_for_lead(*, lead: Lead) -> Call:
    """The callback inbox's "Rückruf starten": an outbound call to the lead's number,
    linked to the lead, through the same cap check and dial as POST /voice/v1/calls
    (MinuteCapReached, CarrierUnavailable as there)."""
    call = call_request_outbound(tenant=lead.tenant, carrier=outbound_carrier(), to_e164=lead.phone, lead_id=lead.pk)
    return call_dial(call=call)


@transaction.atomic
def call_fail_undialled(*, call: Call) -> None:
    call = _locked(Call.objects.select_related("tenant")).get(pk=call.pk)
    if not call.is_ended:
        _finish(call, status=Call.Status.FAILED, seconds=0, ended_at=timezone.now(), recording_url="")


# --- Web calls (the voice agent's WebSocket sessions) ------------------------------------

WEB_CARRIER = "web"


def _web_carrier() -> Carrier:
    """The built-in carrier of calls that arrive over the voice agent's WebSocket. It
    posts no webhooks: the agent writes its calls through the services below."""
    carrier, _ = Carrier.objects.get_or_create(pk=WEB_CARRIER, defaults={"name": "Web (voice agent)",
                                                                         "secret_nonce": new_nonce()})
    return carrier


@transaction.atomic
def call_request_web(*, tenant: Tenant, max_minutes: int | None = None, now: datetime | None = None,
                     assistant: Assistant | None = None) -> Call:
    """Checks the cap and reserves minutes for a voice agent session, exactly as for an
    outbound call: a new inbound call of carrier `web` (status `queued`) holding the
    reservation; its `max_seconds` is the grant the session cannot outlive. `max_minutes`
    caps the grant further (the public demo page's grants). `assistant` (the tenant's,
    or None) answers it: its tools and analysis apply."""
    counter, minutes = _cap_checked(tenant, now or timezone.now())
    if max_minutes is not None:
        minutes = max(1, min(minutes, max_minutes))
    call = Call.objects.create(
        tenant=tenant, carrier=_web_carrier(), direction=Call.Direction.INBOUND, from_e164="", to_e164="",
        assistant=assistant,
        status=Call.Status.QUEUED, reserved_minutes=minutes, reserved_period=counter.period,
        max_seconds=60 * minutes, recording_enabled=False, transcription_enabled=tenant.transcription_enabled,
    )
    _reserve(counter, minutes)
    return call


@transaction.atomic
def call_web_start(*, call_id: str, now: datetime | None = None) -> None:
    """The session's WebSocket is open: the call is active from now on, and its owner's
    first heartbeat is now (`call_heartbeat`)."""
    now = now or timezone.now()
    Call.objects.filter(pk=call_id, started_at__isnull=True, ended_at__isnull=True).update(
        started_at=now, status=Call.Status.ACTIVE, heartbeat_at=now)


@transaction.atomic
def call_web_line(*, call_id: str, role: str, text: str, ts: datetime) -> None:
    """One transcript line or system note of a web call, at its time; kept only where the
    call keeps transcripts, and never after the call ended."""
    call = Call.objects.filter(pk=call_id).only("transcription_enabled", "redacted", "ended_at").first()
    if call is not None and call.transcription_enabled and not call.redacted and not call.is_ended:
        TranscriptEntry.objects.create(call_id=call_id, role=role, text=text, ts=ts)


def call_turn_latency_record(*, call_id: str, total_ms: int, end_of_turn_ms: int, recognition_ms: int, thinking_ms: int,
                             synthesis_ms: int) -> None:
    """One reply's latency, measured by the voice agent, stored with its call (an insert:
    it locks nothing the call's end waits for)."""
    TurnLatency.objects.create(call_id=call_id, total_ms=total_ms, end_of_turn_ms=end_of_turn_ms,
                               recognition_ms=recognition_ms, thinking_ms=thinking_ms, synthesis_ms=synthesis_ms)


@transaction.atomic
def call_web_disclosed(*, call_id: str) -> None:
    """The disclosure was spoken to the caller in full."""
    Call.objects.filter(pk=call_id).update(disclosed=True)


@retry_conflicts(attempts=END_ATTEMPTS)
@transaction.atomic
def call_web_end(*, call_id: str, status: str = Call.Status.COMPLETED, now: datetime | None = None) -> Call:
    """Ends a web call, releases its reservation and books its seconds — once, whatever
    ends it (the client, a timeout, a dropped connection, the end of the grant): a
    second end finds the call ended and changes nothing. A call that never started
    (its token was never used) ends `canceled` with 0 seconds. Returns the call.

    Run again when the database aborts it for a deadlock (END_ATTEMPTS in all)."""
    now = now or timezone.now()
    call = _locked(Call.objects.select_related("tenant")).get(pk=call_id)
    if call.is_ended:
        return call
    if call.started_at is None:
        status, seconds = Call.Status.CANCELED, 0
    else:
        seconds = max(0, round((now - call.started_at).total_seconds()))
        seconds = min(seconds, call.max_seconds or seconds)
    _finish(call, status=status, seconds=seconds, ended_at=now, recording_url="")
    return call


# --- What the assistant does through its built-in tools -----------------------------------
# The conversation core runs the model's tool calls (tools_app.services.tool_run); the
# calls' side of them is here, the only writer of calls: a callback lead linked to the
# call, the one check of a transfer, and the record of what the assistant did
# (`Call.assistant_actions`: names and times, which the analysis reads).

ACTION_TOOLS = ("create_callback", "transfer_call", "end_call", "opt_out")
MAX_ACTIONS = 50


def _record_action(call: Call, tool: str, **details: Any) -> None:
    actions = list(call.assistant_actions or [])
    actions.append({"tool": tool, "at": timezone.now().isoformat().replace("+00:00", "Z"), **details})
    call.assistant_actions = actions[-MAX_ACTIONS:]
    call.save(update_fields=["assistant_actions"])


def _caller_number(call: Call) -> str:
    """The caller's number of a call in E.164, or "" (web calls, withheld or erased numbers)."""
    number = call.from_e164 if call.direction == Call.Direction.INBOUND else call.to_e164
    return number if number.startswith("+") else ""


@transaction.atomic
def call_callback_create(*, call_id: str, phone: str | None = None, preferred_time: str | None = None,
                         reason: str = "", now: datetime | None = None) -> Lead:
    """The built-in tool create_callback: a lead of kind `callback` for the call's
    caller, linked to the call (`Call.lead_id`, when the call names no lead yet), with
    its `lead.created` webhook as every lead. `phone` in any format (default: the
    caller's number; a web call has none, so the caller must be asked); `preferred_time`
    a token (`tomorrow-am`), an ISO time or the caller's words ("morgen Vormittag",
    "Dienstag um 10 Uhr"), resolved on the tenant's clock where they name a moment and
    kept as words in the lead's notes where they do not. A second callback in the same
    call corrects the first (`lead.updated`) instead of adding another. Returns the lead;
    ValidationFailed naming `phone` or `preferred_time`."""
    now = now or timezone.now()
    call = _locked(Call.objects.select_related("tenant")).get(pk=call_id)
    tenant = call.tenant
    if phone not in (None, ""):
        try:
            e164 = to_e164(str(phone))
        except InvalidPhoneNumber as exc:
            raise ValidationFailed.field("phone", str(exc)) from None
    else:
        e164 = _caller_number(call)
        if not e164:
            raise ValidationFailed.field("phone", "No caller number is known for this call: ask the caller for "
                                                  "the number to call back.")
    words = " ".join(str(preferred_time or "").split())[:200]
    parsed = from_words(words, now=now, time_zone=tenant.time_zone) if words else None
    notes = [f"Rückrufwunsch aus dem Anruf {call.pk}."]
    if words and (parsed is None or parsed.token != words):
        notes.append(f"Wunschzeit laut Anrufer: {words}")
    if reason:
        notes.append(f"Anliegen: {' '.join(str(reason).split())[:500]}")
    earlier = None
    if call.lead_id:
        earlier = Lead.objects.for_tenant(tenant).filter(
            pk=call.lead_id, kind=Lead.Kind.CALLBACK, created_at__gte=call.created_at).select_related("tenant").first()
    if earlier is not None:
        lead = lead_callback_revise(lead=earlier, phone=e164, preferred_time=parsed, notes="\n".join(notes))
    else:
        lead = lead_create(tenant=tenant, kind=Lead.Kind.CALLBACK, phone=e164, preferred_time=parsed,
                           notes="\n".join(notes))
        if not call.lead_id:
            call.lead_id = lead.pk
            call.save(update_fields=["lead_id"])
    _record_action(call, "create_callback")
    return lead


@transaction.atomic
def call_transfer(*, call_id: str, target: str) -> dict[str, Any]:
    """The built-in tool transfer_call: the transfer target of the call's assistant
    that `target` names (its name, or its number in any format) as `{"name", "e164"}`,
    recorded on the call; TransferRefused (400 `transfer_refused`) for anything else —
    a number the caller, a knowledge passage or a tool's answer put into the model's
    request is never reached. The transport (ending the browser call with a system
    note, a carrier's transfer) is the conversation's."""
    call = _locked(Call.objects.select_related("tenant", "assistant")).get(pk=call_id)
    if call.assistant is None:
        raise TransferRefused("This call has no assistant, so it has no transfer targets.")
    chosen = assistant_transfer_target_named(assistant=call.assistant, name=target)
    _record_action(call, "transfer_call", target=chosen["name"])
    return chosen


@transaction.atomic
def call_action_record(*, call_id: str, tool: str) -> None:
    """Records a built-in tool without data of its own on the call: `end_call` (the
    assistant ends the call after its goodbye) or `opt_out` (the caller objects to
    further contact). The conversation ends the call itself (`call_web_end`)."""
    if tool not in ("end_call", "opt_out"):
        raise ValueError(f"{tool} is recorded by its own service")
    _record_action(_locked(Call.objects.all()).get(pk=call_id), tool)


def call_tool_notes_erase(*, tenant: Tenant, e164: str) -> int:
    """For an erasure by caller (privacy_app): deletes the system notes of the tenant's
    calls that name the number (the conversation writes tool calls as system notes,
    numbers in E.164); returns how many."""
    notes = TranscriptEntry.objects.filter(call__tenant=tenant, role=TranscriptEntry.Role.SYSTEM,
                                           text__contains=e164)
    return notes.delete()[1].get(TranscriptEntry._meta.label, 0)


# --- Owners' heartbeats ------------------------------------------------------------------
# A call whose conversation a process of ours holds (the voice agent's WebSocket; a phone
# call's media stream served here does the same) has an owner, which says every
# CALL_HEARTBEAT_SEC that it still holds it. A killed server says nothing more: the
# sweep books its calls (docs/operations.md, "When something dies").

@transaction.atomic
def call_heartbeat(*, call_id: str, now: datetime | None = None) -> bool:
    """The owner of a call under way (the process that holds its conversation) still
    holds it; called every CALL_HEARTBEAT_SEC. Returns False when the call has ended
    meanwhile (e.g. the sweep took the owner for dead): the owner should stop."""
    return Call.objects.filter(pk=call_id, ended_at__isnull=True).update(heartbeat_at=now or timezone.now()) == 1


def calls_orphaned_end(*, now: datetime | None = None) -> int:
    """The periodic job: ends every call under way whose owner has not written a
    heartbeat for CALL_HEARTBEAT_TIMEOUT_SEC (its server was killed, its machine lost),
    web or phone alike, through the one booking path (`_finish`): `completed`, ended
    and booked at its last heartbeat, the seconds its owner was known to hold it, its
    reservation released, `call.ended` announced. A call ended once is never booked
    again, and a call whose owner is alive is not touched. Returns how many it ended."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.CALL_HEARTBEAT_TIMEOUT_SEC)
    orphans = list(Call.objects.filter(ended_at__isnull=True, heartbeat_at__lt=cutoff)
                   .order_by("heartbeat_at").values_list("pk", flat=True)[:1000])
    ended = [call_id for call_id in orphans if _orphan_end(call_id=call_id, cutoff=cutoff)]
    if ended:
        logger.warning("Ended %s call(s) whose owner stopped its heartbeat, booked up to the last one: %s",
                       len(ended), ", ".join(ended))
    return len(ended)


@retry_conflicts(attempts=END_ATTEMPTS)
@transaction.atomic
def _orphan_end(*, call_id: str, cutoff: datetime) -> bool:
    """Under the call's lock: ends it if it is still under way without a heartbeat since
    `cutoff` (its owner may have ended it, or come back, since the sweep's read)."""
    call = _locked(Call.objects.select_related("tenant")).filter(pk=call_id).first()
    if call is None or call.is_ended or call.heartbeat_at is None or call.heartbeat_at >= cutoff:
        return False
    ended_at = call.heartbeat_at
    if call.started_at is None:
        status, seconds = Call.Status.CANCELED, 0
    else:
        status = Call.Status.COMPLETED
        seconds = max(0, round((ended_at - call.started_at).total_seconds()))
        seconds = min(seconds, call.max_seconds or seconds)
    _finish(call, status=status, seconds=seconds, ended_at=ended_at, recording_url="")
    return True


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


def _finish(call: Call, *, status: str, seconds: int, ended_at: datetime, recording_url: str) -> None:
    """Ends the call, releases its reservation and books its minutes, in one transaction."""
    tenant = call.tenant
    # A call counts in the month in which it started; one that never started, in
    # the month it was requested.
    period = period_of(call.started_at or call.created_at, tenant.time_zone)
    periods = sorted({period, call.reserved_period} - {""})  # fixed lock order
    counters = {p: _locked_counter(tenant, p) for p in periods}
    if call.reserved_minutes and call.reserved_period:
        reserved = counters[call.reserved_period]
        reserved.reserved_minutes = max(0, reserved.reserved_minutes - call.reserved_minutes)
    booked = counters[period]
    minutes_before = booked.minutes
    booked.minutes += billable_minutes(seconds)
    booked.seconds += seconds
    booked.calls += 1
    for counter in counters.values():
        counter.save(update_fields=["minutes", "seconds", "calls", "reserved_minutes", "updated_at"])
    call.status, call.seconds, call.ended_at, call.recording_url = status, seconds, ended_at, recording_url
    call.usage_period = period
    call.save(update_fields=["status", "seconds", "ended_at", "recording_url", "usage_period"])
    _announce(call, "call.ended")
    _announce_thresholds(tenant, period, minutes_before, booked.minutes)
    if call.started_at is not None:
        # Once per call: _finish runs only for a call not yet ended, under its lock, and
        # the job is queued only if this transaction commits (calls_app.analysis).
        job_enqueue_on_commit(ANALYSIS_JOB, kwargs={"call_id": call.pk})


# The analysis of an ended call that had a conversation (calls_app.analysis).
ANALYSIS_JOB = "calls_app.analysis.call_analyze"


# Shares of the monthly minute cap at which `usage.threshold` is announced (once each).
USAGE_THRESHOLDS = (80, 100)


def _announce(call: Call, event_type: str) -> None:
    """The call's webhook event, in this transaction (sent after the commit); keyed by
    the call, so a carrier that reports the same start or end twice announces it once."""
    event_publish(tenant=call.tenant, event_type=event_type, key=f"{event_type}:{call.pk}", data={
        "id": call.pk, "direction": call.direction, "status": call.status, "from": call.from_e164,
        "to": call.to_e164, "leadId": call.lead_id or None, "startedAt": call.started_at,
        "endedAt": call.ended_at, "seconds": call.seconds,
    })


def _announce_thresholds(tenant: Tenant, period: str, before: int, after: int) -> None:
    for percent in USAGE_THRESHOLDS:
        threshold = tenant.minute_cap * percent / 100
        if tenant.minute_cap and before < threshold <= after:
            event_publish(tenant=tenant, event_type="usage.threshold", key=f"usage.threshold:{period}:{percent}",
                          data={"period": period, "percent": percent, "usedMinutes": after, "cap": tenant.minute_cap})


# --- Usage recomputation ----------------------------------------------------------------

@dataclass(frozen=True)
class UsageDrift:
    tenant: str
    period: str
    field: str
    stored: int
    actual: int


COUNTED_FIELDS = ("minutes", "seconds", "calls", "reserved_minutes")


def usage_recompute(*, tenant: Tenant, fix: bool = True) -> list[UsageDrift]:
    """Recounts the tenant's usage counters from its calls; returns the drift found
    (and, with `fix`, corrects it). The counters are locked first, so bookings that
    run meanwhile wait and are not lost."""
    with transaction.atomic():
        stored = {c.period: c for c in UsageCounter.objects.for_tenant(tenant).select_for_update()}
        actual = _usage_from_calls(tenant)
        drift = []
        for period in sorted(set(stored) | set(actual)):
            counter = stored.get(period) or UsageCounter(tenant=tenant, period=period)
            wanted = actual.get(period, dict.fromkeys(COUNTED_FIELDS, 0))
            changed = [f for f in COUNTED_FIELDS if getattr(counter, f) != wanted[f]]
            drift += [UsageDrift(tenant.slug, period, f, getattr(counter, f), wanted[f]) for f in changed]
            if fix and changed:
                for field in changed:
                    setattr(counter, field, wanted[field])
                counter.save()
    return drift


def _usage_from_calls(tenant: Tenant) -> dict[str, dict[str, int]]:
    totals: dict[str, dict[str, int]] = {}

    def period_totals(period: str) -> dict[str, int]:
        return totals.setdefault(period, dict.fromkeys(COUNTED_FIELDS, 0))

    rows = Call.objects.for_tenant(tenant).values_list(
        "started_at", "created_at", "ended_at", "seconds", "reserved_minutes", "reserved_period"
    )
    for started_at, created_at, ended_at, seconds, reserved_minutes, reserved_period in rows.iterator(2000):
        if ended_at is not None:
            booked = period_totals(period_of(started_at or created_at, tenant.time_zone))
            booked["minutes"] += billable_minutes(seconds)
            booked["seconds"] += seconds
            booked["calls"] += 1
        elif reserved_minutes and reserved_period:
            period_totals(reserved_period)["reserved_minutes"] += reserved_minutes
    return totals
