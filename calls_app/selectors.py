"""Reads of calls and usage; every query starts from the tenant."""
from django.db.models import Q
from django.utils import timezone

from calls_app.models import Call, TranscriptEntry, UsageCounter
from calls_app.periods import next_period_start, period_of
from console.pagination import page_after

# The columns of a call in the Console API (calls_app.serializers.CallSerializer).
CALL_COLUMNS = (
    "id", "direction", "from_e164", "to_e164", "status", "carrier_id", "disclosed", "seconds", "max_seconds",
    "recording_enabled", "transcription_enabled", "recording_url", "lead_id", "created_at", "started_at", "ended_at",
    "redacted",
)


def calls_newest(*, tenant, limit):
    """The tenant's newest calls with their transcripts: two queries whatever the limit."""
    return list(Call.objects.for_tenant(tenant).newest_first().with_transcript()[:limit])


def calls_newest_rows(*, tenant, limit):
    """The same as `calls_newest` as plain rows, for the list endpoint: the calls (dicts
    of CALL_COLUMNS) and their transcript lines by call id ((role, text, ts) in order).
    Two queries whatever the limit, like the prefetch; no model instances are built."""
    calls = list(Call.objects.for_tenant(tenant).newest_first().values(*CALL_COLUMNS)[:limit])
    return calls, transcript_lines(calls)


def calls_page_rows(*, tenant, limit, cursor=None, status=None, direction=None, number=None, since=None,
                    until=None, lead=None):
    """A page of `GET /v2/calls` as rows (see `calls_newest_rows`), filtered, after
    `cursor`, with the cursor of the next page: `(calls, lines, next)`. Two queries
    whatever the depth (console/pagination.py)."""
    calls = Call.objects.for_tenant(tenant)
    if status:
        calls = calls.filter(status=status)
    if direction:
        calls = calls.filter(direction=direction)
    if number:
        calls = calls.filter(Q(from_e164=number) | Q(to_e164=number))
    if since:
        calls = calls.filter(created_at__gte=since)
    if until:
        calls = calls.filter(created_at__lt=until)
    if lead:
        calls = calls.filter(lead_id=lead)
    rows, next_cursor = page_after(calls.values(*CALL_COLUMNS), tenant=tenant, scope="calls", cursor=cursor,
                                   limit=limit)
    return rows, transcript_lines(rows), next_cursor


def transcript_lines(calls):
    """The transcript lines of call rows by call id, `(role, text, ts)` in order: one query."""
    lines = {}
    if calls:
        entries = TranscriptEntry.objects.filter(call_id__in=[call["id"] for call in calls]).order_by("ts", "id")
        for call_id, role, text, ts in entries.values_list("call_id", "role", "text", "ts"):
            lines.setdefault(call_id, []).append((role, text, ts))
    return lines


def outbound_call_get(*, tenant, call_id):
    return Call.objects.for_tenant(tenant).get(pk=call_id, direction=Call.Direction.OUTBOUND)


def call_was_refused(*, tenant, call_id):
    """Whether the carrier refused to dial the call (services.call_dial failed it)."""
    return Call.objects.for_tenant(tenant).filter(
        pk=call_id, status=Call.Status.FAILED, carrier_call_id__isnull=True, started_at__isnull=True,
    ).exists()


def usage_for(*, tenant, now=None):
    """The usage record of the tenant's current month (CONTRACT §5): one row read."""
    now = now or timezone.now()
    period = period_of(now, tenant.time_zone)
    counter = UsageCounter.objects.for_tenant(tenant).filter(period=period).first() or UsageCounter(period=period)
    remaining = max(0, tenant.minute_cap - counter.minutes - counter.reserved_minutes)
    return {
        "tenant": tenant.slug,
        "period": period,
        "minutesThisMonth": counter.minutes,
        "secondsThisMonth": counter.seconds,
        "minuteCap": tenant.minute_cap,
        "reservedMinutes": counter.reserved_minutes,
        "remainingMinutes": remaining,
        "resetsAt": next_period_start(now, tenant.time_zone).isoformat().replace("+00:00", "Z"),
    }
