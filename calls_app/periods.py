"""Usage periods: the tenant's calendar month in its own time zone (CONTRACT §5)."""
import datetime as dt
import math
import zoneinfo


def period_of(moment, time_zone):
    """`YYYY-MM` of the month in `time_zone` that contains the aware datetime `moment`."""
    return moment.astimezone(zoneinfo.ZoneInfo(time_zone)).strftime("%Y-%m")


def next_period_start(moment, time_zone):
    """The instant (UTC) at which the month containing `moment` ends in `time_zone`."""
    local = moment.astimezone(zoneinfo.ZoneInfo(time_zone))
    year, month = (local.year + 1, 1) if local.month == 12 else (local.year, local.month + 1)
    return dt.datetime(year, month, 1, tzinfo=zoneinfo.ZoneInfo(time_zone)).astimezone(dt.timezone.utc)


def billable_minutes(seconds):
    """A call counts in whole started minutes."""
    return math.ceil(seconds / 60)
