"""The minute ledger: the cap check and its reservations, booking a call's end, the
usage counters and their recount. Every writer of calls and usage books through here
(`_finish`), in the one lock order below."""
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import models, transaction
from django.utils import timezone

from calls_app.errors import MinuteCapReached
from calls_app.models import Call, UsageCounter
from calls_app.periods import billable_minutes, next_period_start, period_of
from console.jobs.services import job_enqueue_on_commit
from console.tenants.models import Tenant
from webhooks_app.services import event_publish

logger = logging.getLogger("calls_app.webhook")


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


def _finish(call: Call, *, status: str, seconds: int, ended_at: datetime, recording_url: str) -> None:
    """Ends the call, releases its reservation and books its minutes, in one transaction.
    A test call (the admin's browser test) is ended and analysed but booked nowhere: no
    minutes, no counted call, no webhook."""
    tenant = call.tenant
    if call.is_test:
        call.status, call.seconds, call.ended_at, call.recording_url = status, seconds, ended_at, recording_url
        call.save(update_fields=["status", "seconds", "ended_at", "recording_url"])
        if call.started_at is not None:
            job_enqueue_on_commit(ANALYSIS_JOB, kwargs={"call_id": call.pk})
        return
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


def call_held_book(call: Call) -> None:
    """Books a call held for an Asterisk dialplan's warm hand-over (locked by the
    caller; `transferred_to` set, not ended: calls_app.phone_calls.call_hand_over) as
    handed over: ended at the hand-over, with the seconds kept then. Whoever books it
    first (the person answering, the dialplan's report, the orphan sweep) books it once;
    a call not held (ended, or its conversation going on) is left alone."""
    if call.is_ended or not call.transferred_to:
        return
    ended_at = call.started_at + timedelta(seconds=call.seconds) if call.started_at is not None else timezone.now()
    _finish(call, status=Call.Status.COMPLETED, seconds=call.seconds, ended_at=ended_at,
            recording_url=call.recording_url)


# The analysis of an ended call that had a conversation (calls_app.analysis).
ANALYSIS_JOB = "calls_app.analysis.call_analyze"


def call_seconds_correct(call: Call, seconds: int) -> None:
    """Books an ended call (locked by the caller) with `seconds` instead of the seconds
    it was booked with: the carrier's own duration arrived after our side had ended it.
    Its period's counter moves by the difference; the call is still counted once."""
    counter = _locked_counter(call.tenant, call.usage_period)
    counter.minutes = max(0, counter.minutes + billable_minutes(seconds) - billable_minutes(call.seconds))
    counter.seconds = max(0, counter.seconds + seconds - call.seconds)
    counter.save(update_fields=["minutes", "seconds", "updated_at"])
    call.seconds = seconds
    call.save(update_fields=["seconds"])


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
