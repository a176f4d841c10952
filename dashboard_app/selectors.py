"""The dashboard's figures, in a constant number of queries whatever the data size:
each figure is one aggregate (grouped in the database), the lists are sliced.

Days and months are the tenant's (its `time_zone`), as for the minute cap.
"""
import calendar
import datetime as dt
import math
import zoneinfo
from typing import Any

from django.db.models import Count, F, FloatField, IntegerField, Q, Sum
from django.db.models.functions import Cast, Coalesce, Greatest, TruncDate

from calls_app.models import Call, UsageCounter
from calls_app.selectors import usage_for
from console.locale import ADMIN_TIME_ZONE
from console.tenants.models import Tenant
from leads_app.models import OPEN_STATUSES, Lead

DAYS = 30
LATEST = 5
# The platform view's "near the cap": this share of the month's cap used or reserved
# (the first threshold of the `usage.threshold` webhook), and how many tenants it shows.
NEAR_CAP = 0.8
CAP_ROWS = 10


def month_projection(*, used: int, local_today: dt.date, days_in_month: int) -> int:
    """Minutes at month end if the rest of the month runs at this month's daily rate
    so far (today counted as a whole day): ceil(used × days in month / day of month)."""
    return math.ceil(used * days_in_month / local_today.day)


def dashboard_figures(*, tenant: Tenant, now: dt.datetime) -> dict[str, Any]:
    """Everything the dashboard of `tenant` shows at `now` (aware): 6 queries."""
    zone = zoneinfo.ZoneInfo(tenant.time_zone)
    local_now = now.astimezone(zone)
    today = local_now.date()
    days_in_month = calendar.monthrange(today.year, today.month)[1]
    first_day = today - dt.timedelta(days=DAYS - 1)
    since = dt.datetime.combine(first_day, dt.time(), tzinfo=zone)

    usage = usage_for(tenant=tenant, now=now)  # 1 query: the same figures as GET /v2/usage
    calls = Call.objects.for_tenant(tenant)
    day = TruncDate(Coalesce("started_at", "created_at"), tzinfo=zone)
    # Calls start after they are created, so the created_at index bounds the rows;
    # the day (of the start) is computed only for those.
    rows = (calls.filter(created_at__gte=since)
            .annotate(day=day)
            .values("day", "direction", "status")
            .annotate(calls=Count("id"), minutes=Sum((F("seconds") + 59) / 60, output_field=IntegerField()))
            .order_by())  # 1 query
    per_day: dict[dt.date, dict[str, Any]] = {first_day + dt.timedelta(days=n): {"minutes": 0, "inbound": 0, "outbound": 0, "outcomes": {}}
               for n in range(DAYS)}
    for row in rows:
        entry = per_day.get(row["day"])
        if entry is None:  # a start reported for a later day than today
            continue
        entry["minutes"] += row["minutes"] or 0
        entry[row["direction"]] += row["calls"]
        entry["outcomes"][row["status"]] = entry["outcomes"].get(row["status"], 0) + row["calls"]

    leads = Lead.objects.for_tenant(tenant)
    by_status = dict(leads.values_list("status").annotate(n=Count("id")).order_by())  # 1 query
    start_of_today = dt.datetime.combine(today, dt.time(), tzinfo=zone)
    start_of_tomorrow = dt.datetime.combine(today + dt.timedelta(days=1), dt.time(), tzinfo=zone)
    due = leads.filter(status__in=OPEN_STATUSES, kind=Lead.Kind.CALLBACK).aggregate(  # 1 query
        overdue=Count("id", filter=Q(preferred_at_resolved__lt=now)),
        due_today=Count("id", filter=Q(preferred_at_resolved__gte=now, preferred_at_resolved__lt=start_of_tomorrow)),
        open_today=Count("id", filter=Q(preferred_at_resolved__gte=start_of_today,
                                         preferred_at_resolved__lt=start_of_tomorrow)),
    )
    return {
        "tenant": tenant,
        "today": today,
        "usage": usage,
        "cap": tenant.minute_cap,
        "days_in_month": days_in_month,
        "projection": month_projection(used=usage["minutesThisMonth"], local_today=today,
                                       days_in_month=days_in_month),
        "daily_share": tenant.minute_cap / days_in_month,
        "per_day": per_day,
        "leads_by_status": {status: by_status.get(status, 0) for status in Lead.Status.values},
        "overdue": due["overdue"],
        "due_today": due["due_today"],
        "latest_calls": list(calls.order_by("-created_at", "-id")[:LATEST]),  # 1 query
        "latest_leads": list(leads.order_by("-created_at", "-id")[:LATEST]),  # 1 query
    }


def _days_since(now: dt.datetime, zone: zoneinfo.ZoneInfo) -> tuple[list[dt.date], dt.datetime]:
    """The last DAYS days of `zone` up to today, and the moment the first one began."""
    today = now.astimezone(zone).date()
    first_day = today - dt.timedelta(days=DAYS - 1)
    return [first_day + dt.timedelta(days=n) for n in range(DAYS)], dt.datetime.combine(first_day, dt.time(),
                                                                                         tzinfo=zone)


def platform_figures(*, now: dt.datetime, time_zone: str = ADMIN_TIME_ZONE) -> dict[str, Any]:
    """For superusers, across all tenants: the totals, minutes and calls per day of
    the last 30 days (days of `time_zone`, the zone the admin shows a superuser), and
    the tenants that used the largest share of their cap this month. 6 queries."""
    figures = platform_totals(now=now)  # 3 queries
    zone = zoneinfo.ZoneInfo(time_zone)
    days, since = _days_since(now, zone)
    per_day = {day: {"minutes": 0, "calls": 0} for day in days}
    rows = (Call.objects.filter(created_at__gte=since)
            .annotate(day=TruncDate(Coalesce("started_at", "created_at"), tzinfo=zone))
            .values("day")
            .annotate(calls=Count("id"), minutes=Sum((F("seconds") + 59) / 60, output_field=IntegerField()))
            .order_by())  # 1 query
    for row in rows:
        entry = per_day.get(row["day"])
        if entry is not None:
            entry["minutes"] += row["minutes"] or 0
            entry["calls"] += row["calls"]
    # Used and reserved minutes against the tenant's cap (a cap of 0 counts as 1 minute,
    # so a tenant without minutes that used some is at the top).
    counters = UsageCounter.objects.filter(period=figures["period"]).annotate(
        share=Cast(F("minutes") + F("reserved_minutes"), FloatField())
        / Cast(Greatest(F("tenant__minute_cap"), 1), FloatField()))
    top = counters.filter(share__gt=0).order_by("-share", "tenant__slug").values(
        "tenant__slug", "tenant__name", "tenant__minute_cap", "minutes", "reserved_minutes", "share")[:CAP_ROWS]
    near_cap = [{"slug": row["tenant__slug"], "name": row["tenant__name"], "cap": row["tenant__minute_cap"],
                 "used": row["minutes"], "reserved": row["reserved_minutes"], "share": row["share"]}
                for row in top]  # 1 query
    figures.update(
        per_day=per_day,
        near_cap=near_cap,
        near_cap_count=counters.filter(share__gte=NEAR_CAP).count(),  # 1 query
    )
    return figures


def platform_totals(*, now: dt.datetime) -> dict[str, Any]:
    """For superusers: tenants, calls, leads and this month's minutes of all tenants
    (months of each tenant's zone are alike to a day; the UTC month is used). 3 queries."""
    period = now.strftime("%Y-%m")
    usage = UsageCounter.objects.filter(period=period).aggregate(minutes=Coalesce(Sum("minutes"), 0),
                                                                  tenants=Count("tenant_id", distinct=True))
    return {
        "period": period,
        "minutes": usage["minutes"],
        "active_tenants": usage["tenants"],
        "calls": Call.objects.count(),
        "open_leads": Lead.objects.filter(status__in=OPEN_STATUSES).count(),
    }
