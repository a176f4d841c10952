"""Reads of calls and usage; every query starts from the tenant."""
from django.utils import timezone

from calls_app.models import Call, UsageCounter
from calls_app.periods import next_period_start, period_of

def calls_newest(*, tenant, limit):
    """The tenant's newest calls with their transcripts: two queries whatever the limit."""
    return list(Call.objects.for_tenant(tenant).newest_first().with_transcript()[:limit])


def call_get(*, tenant, call_id):
    return Call.objects.for_tenant(tenant).with_transcript().get(pk=call_id)


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
