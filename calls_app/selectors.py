"""Reads of calls and usage; every query starts from the tenant."""
from django.db.models import Q
from django.utils import timezone

from calls_app.models import Call, TranscriptEntry, UsageCounter
from calls_app.periods import next_period_start, period_of
from console.compiled import CompiledQuery
from console.pagination import after_cursor, page_of
from console.representation import datetime_text

# The columns of a call in the Console API (calls_app.serializers.CallSerializer).
CALL_COLUMNS = (
    "id", "direction", "from_e164", "to_e164", "status", "carrier_id", "disclosed", "seconds", "max_seconds",
    "recording_enabled", "transcription_enabled", "recording_url", "lead_id", "created_at", "started_at", "ended_at",
    "redacted",
)


def calls_newest(*, tenant, limit):
    """The tenant's newest calls with their transcripts: two queries whatever the limit."""
    return list(Call.objects.for_tenant(tenant).newest_first().with_transcript()[:limit])


_newest_call_rows = CompiledQuery(
    lambda tenant_id, *, limit: Call.objects.for_tenant(tenant_id).newest_first().values_list(*CALL_COLUMNS)[:limit],
    datetimes_as_text=True)
# One variant per number of calls (the IN list has a parameter per call).
_transcript_rows = CompiledQuery(
    lambda *call_ids: TranscriptEntry.objects.filter(call_id__in=call_ids).order_by("ts", "id").values_list(
        "call_id", "role", "text", "ts"), datetimes_as_text=True)


def calls_newest_rows(*, tenant, limit):
    """The same as `calls_newest` as plain rows, for the list endpoint: the calls (tuples
    of CALL_COLUMNS) and their transcript lines by call id ((call_id, role, text, ts) in
    order), timestamps as the API writes them. Two queries whatever the limit, like the
    prefetch; no model instances are built."""
    calls = _newest_call_rows(tenant.id, limit=limit)
    lines = {}
    if calls:
        for line in _transcript_rows(*(call[0] for call in calls)):
            lines.setdefault(line[0], []).append(line)
    return calls, lines


# Columns of CALL_COLUMNS that hold timestamps (written as text in the rows).
_CALL_MOMENTS = tuple(CALL_COLUMNS.index(name) for name in ("created_at", "started_at", "ended_at"))
_CREATED, _ID = CALL_COLUMNS.index("created_at"), CALL_COLUMNS.index("id")


def calls_page_rows(*, tenant, limit, cursor=None, status=None, direction=None, number=None, since=None,
                    until=None, lead=None):
    """A page of `GET /v2/calls` as rows (see `calls_newest_rows`), filtered, after
    `cursor`, with the cursor of the next page: `(calls, lines, next)`. Two queries
    whatever the depth (console/pagination.py). The first page without filters, the
    common read, takes the compiled query."""
    if not any((cursor, status, direction, number, since, until, lead)):
        rows = _newest_call_rows(tenant.id, limit=limit + 1)
    else:
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
        calls = after_cursor(calls, tenant=tenant, scope="calls", cursor=cursor)
        rows = [_with_moments_as_text(row) for row in calls.values_list(*CALL_COLUMNS)[:limit + 1]]
    calls, next_cursor = page_of(rows, tenant=tenant, scope="calls", limit=limit,
                                 position=lambda row: (row[_CREATED], row[_ID]))
    lines = {}
    if calls:
        for line in _transcript_rows(*(call[0] for call in calls)):
            lines.setdefault(line[0], []).append(line)
    return calls, lines, next_cursor


def _with_moments_as_text(row):
    row = list(row)
    for position in _CALL_MOMENTS:
        row[position] = datetime_text(row[position])
    return tuple(row)


def outbound_call_get(*, tenant, call_id):
    return Call.objects.for_tenant(tenant).get(pk=call_id, direction=Call.Direction.OUTBOUND)


def call_was_refused(*, tenant, call_id):
    """Whether the carrier refused to dial the call (services.call_dial failed it)."""
    return Call.objects.for_tenant(tenant).filter(
        pk=call_id, status=Call.Status.FAILED, carrier_call_id__isnull=True, started_at__isnull=True,
    ).exists()


# The counter of one month (unique per tenant and period), or no row: nothing booked yet.
_month_counter = CompiledQuery(lambda tenant_id, period: UsageCounter.objects.for_tenant(tenant_id).filter(
    period=period).order_by().values_list("minutes", "seconds", "reserved_minutes"))


def usage_for(*, tenant, now=None):
    """The usage record of the tenant's current month (CONTRACT §5): one row read."""
    now = now or timezone.now()
    period = period_of(now, tenant.time_zone)
    minutes, seconds, reserved_minutes = next(iter(_month_counter(tenant.id, period)), (0, 0, 0))
    remaining = max(0, tenant.minute_cap - minutes - reserved_minutes)
    return {
        "tenant": tenant.slug,
        "period": period,
        "minutesThisMonth": minutes,
        "secondsThisMonth": seconds,
        "minuteCap": tenant.minute_cap,
        "reservedMinutes": reserved_minutes,
        "remainingMinutes": remaining,
        "resetsAt": next_period_start(now, tenant.time_zone).isoformat().replace("+00:00", "Z"),
    }
