"""When a campaign may call: its weekly window in the tenant's time zone, never on a
Sunday and never on a public holiday of the tenant's federal state (console.holidays),
and within the campaign's startAt/endAt.

All of it is pure: `next_slot(now, …)` takes the moment it is asked at (the
scheduler's clock), so tests move time freely, DST weekends included. Local times
are turned into instants by the zone's rules (zoneinfo): 09:00 in Berlin is 08:00 UTC
in winter and 07:00 UTC in summer; a window bound that does not exist on the day the
clocks go forward (02:30) is read as the instant after the gap.
"""
import re
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from console.holidays import holiday_name

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
# Accepted spellings of a weekday key (written back as the three-letter form).
DAY_ALIASES = {
    **{day: day for day in DAYS},
    "monday": "mon", "tuesday": "tue", "wednesday": "wed", "thursday": "thu", "friday": "fri",
    "saturday": "sat", "sunday": "sun",
    "mo": "mon", "di": "tue", "mi": "wed", "do": "thu", "fr": "fri", "sa": "sat", "so": "sun",
}
DEFAULT_WINDOW = {
    **{day: {"start": "09:00", "end": "20:00"} for day in ("mon", "tue", "wed", "thu", "fri")},
    "sat": {"start": "10:00", "end": "16:00"},
}
_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$|^24:00$")
# How far ahead a slot is looked for: a window that opens less often than this is none.
HORIZON_DAYS = 400


class WindowInvalid(ValueError):
    """The message says what to send instead."""


def window_parse(value):
    """The canonical window of `value`: `{"mon": {"start": "09:00", "end": "20:00"}, …}`.

    A day is `{"start", "end"}`, `["09:00", "20:00"]` or `"09:00-20:00"`; days left out
    (or null) are not called. Sunday is refused: no campaign calls on Sundays."""
    if not isinstance(value, dict):
        raise WindowInvalid('Send an object of weekdays, e.g. {"mon": {"start": "09:00", "end": "20:00"}}.')
    window = {}
    for key, hours in value.items():
        day = DAY_ALIASES.get(str(key).strip().lower())
        if day is None:
            raise WindowInvalid(f"'{key}' is not a weekday; use mon, tue, wed, thu, fri, sat.")
        if hours is None:
            continue
        if day == "sun":
            raise WindowInvalid("No campaign calls on Sundays (nor on public holidays); leave 'sun' out.")
        start, end = _hours(day, hours)
        if day in window:
            raise WindowInvalid(f"'{day}' is given twice.")
        window[day] = {"start": start, "end": end}
    if not window:
        raise WindowInvalid("The window names no day to call on.")
    return {day: window[day] for day in DAYS if day in window}


def _hours(day, hours):
    if isinstance(hours, dict):
        start, end = hours.get("start"), hours.get("end")
        unknown = set(hours) - {"start", "end"}
        if unknown:
            raise WindowInvalid(f"'{day}' takes start and end only.")
    elif isinstance(hours, list | tuple) and len(hours) == 2:
        start, end = hours
    elif isinstance(hours, str) and hours.count("-") == 1:
        start, end = (part.strip() for part in hours.split("-"))
    else:
        raise WindowInvalid(f"'{day}': send {{\"start\": \"09:00\", \"end\": \"20:00\"}}.")
    for name, text in (("start", start), ("end", end)):
        if not isinstance(text, str) or not _TIME.match(text):
            raise WindowInvalid(f"'{day}' {name}: a time of day as HH:MM (00:00–24:00), e.g. 09:00.")
    if start >= end:
        raise WindowInvalid(f"'{day}': the end ({end}) must be after the start ({start}).")
    return start, end


def closed_reason(day, state):
    """Why nobody is called on `day` (a local date) whatever the window, or None."""
    if day.weekday() == 6:
        return "Sonntag"
    return holiday_name(day, state)


def _instant(day, hhmm, zone):
    if hhmm == "24:00":
        return _instant(day + timedelta(days=1), "00:00", zone)
    hour, minute = int(hhmm[:2]), int(hhmm[3:])
    # A wall time in the spring gap (02:30) is read with the offset before the change,
    # which is the instant after the gap (03:30); one that occurs twice in autumn is
    # its first occurrence (fold 0).
    return datetime.combine(day, time(hour, minute), tzinfo=zone).astimezone(UTC)


def day_span(day, window, zone, state):
    """(start, end) instants of calling on local date `day`, or None."""
    hours = window.get(DAYS[day.weekday()])
    if not hours or closed_reason(day, state):
        return None
    return _instant(day, hours["start"], zone), _instant(day, hours["end"], zone)


def next_slot(now, *, window, time_zone, state="", start_at=None, end_at=None):
    """The first moment at or after `now` (and `start_at`) at which the campaign may
    call, or None when no such moment comes before `end_at` (or the horizon)."""
    zone = ZoneInfo(time_zone)
    moment = max(now, start_at) if start_at else now
    day = moment.astimezone(zone).date()
    for offset in range(HORIZON_DAYS):
        span = day_span(day + timedelta(days=offset), window, zone, state)
        if span is None:
            continue
        start, end = span
        if moment < end:
            slot = max(moment, start)
            return None if end_at and slot >= end_at else slot
        if end_at and start >= end_at:
            return None
    return None


def is_open(now, **kwargs):
    return next_slot(now, **kwargs) == now

