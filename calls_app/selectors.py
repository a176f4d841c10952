"""Reads of calls and usage; every query starts from the tenant."""
from django.utils import timezone

from calls_app.models import Call, TranscriptEntry, UsageCounter
from calls_app.periods import next_period_start, period_of

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
    lines = {}
    if calls:
        entries = TranscriptEntry.objects.filter(call_id__in=[call["id"] for call in calls]).order_by("ts", "id")
        for call_id, role, text, ts in entries.values_list("call_id", "role", "text", "ts"):
            lines.setdefault(call_id, []).append((role, text, ts))
    return calls, lines


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
