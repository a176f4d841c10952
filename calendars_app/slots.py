"""Free slots of an appointment type: pure (no calendar, no database), so that tests
move time freely across the change to winter time and holidays.

A start is offered when the whole appointment lies within the type's bookable hours
of its day (wall-clock hours in the tenant's zone, turned into instants by the
zone's rules: 09:00 in Berlin is 08:00 UTC in winter, 07:00 in summer), the day is
no public holiday of the tenant's federal state (when the type says so), it is at
least the minimum notice ahead and at most the horizon, the day has room under the
type's cap, and the appointment with its buffers meets no busy time.
"""
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from calendars_app.appointment_types import DAYS, AppointmentType
from calendars_app.spoken import Wish
from console.holidays import holiday_name

Span = tuple[datetime, datetime]


def step_of(kind: AppointmentType) -> timedelta:
    """How far apart offered starts are: the duration up to half an hour, at least 15 minutes."""
    return timedelta(minutes=max(15, min(kind.duration, 30)))


def day_closed(day: date, kind: AppointmentType, *, state: str) -> bool:
    return kind.holidays_closed and holiday_name(day, state) is not None


def _instant(day: date, hhmm: str, zone: ZoneInfo) -> datetime:
    if hhmm == "24:00":
        return datetime.combine(day + timedelta(days=1), time(0), tzinfo=zone).astimezone(UTC)
    return datetime.combine(day, time(int(hhmm[:2]), int(hhmm[3:])), tzinfo=zone).astimezone(UTC)


def day_starts(day: date, kind: AppointmentType, *, zone: ZoneInfo, state: str) -> Iterator[datetime]:
    """Every start on local `day` whose appointment fits the day's hours (UTC instants)."""
    if day_closed(day, kind, state=state):
        return
    length, step = timedelta(minutes=kind.duration), step_of(kind)
    for start_text, end_text in kind.hours.get(DAYS[day.weekday()], []):
        start, end = _instant(day, start_text, zone), _instant(day, end_text, zone)
        moment = start
        while moment + length <= end:
            yield moment
            moment += step


def meets_busy(start: datetime, kind: AppointmentType, busy: Sequence[Span]) -> bool:
    low = start - timedelta(minutes=kind.buffer_before)
    high = start + timedelta(minutes=kind.duration + kind.buffer_after)
    return any(span_start < high and span_end > low for span_start, span_end in busy)


def _fits(start: datetime, kind: AppointmentType, *, now: datetime, zone: ZoneInfo, busy: Sequence[Span],
          per_day: dict[date, int]) -> bool:
    if start < now + timedelta(minutes=kind.min_notice) or start > now + timedelta(days=kind.max_days_ahead):
        return False
    if kind.max_per_day is not None and per_day.get(start.astimezone(zone).date(), 0) >= kind.max_per_day:
        return False
    return not meets_busy(start, kind, busy)


def bookable(start: datetime, kind: AppointmentType, *, now: datetime, zone: ZoneInfo, state: str,
             busy: Sequence[Span], per_day: dict[date, int]) -> bool:
    """Whether `start` may be booked now (every rule above)."""
    day = start.astimezone(zone).date()
    return start in set(day_starts(day, kind, zone=zone, state=state)) and _fits(
        start, kind, now=now, zone=zone, busy=busy, per_day=per_day)


def search_span(kind: AppointmentType, wish: Wish, *, now: datetime, zone: ZoneInfo, days: int) -> Span:
    """The instants to read busy times for: from the wished day (or now) `days` days on, within the horizon."""
    first = max(now.astimezone(zone).date(), wish.day or date.min)
    start = datetime.combine(first, time(0), tzinfo=zone).astimezone(UTC)
    end = datetime.combine(first + timedelta(days=days), time(0), tzinfo=zone).astimezone(UTC)
    return start, min(end, now + timedelta(days=kind.max_days_ahead, hours=1))


def free_starts(kind: AppointmentType, wish: Wish, *, now: datetime, time_zone: str, state: str,
                busy: Sequence[Span], per_day: dict[date, int], limit: int, days: int = 14) -> list[datetime]:
    """Up to `limit` free starts that fit `wish`: on its day (else the days after), in
    its part of the day, nearest its time first on the wished day (on every day when
    only a time was wished); chronological otherwise."""
    zone = ZoneInfo(time_zone)
    busy = sorted(busy)
    first = max(now.astimezone(zone).date(), wish.day or date.min)
    found: list[datetime] = []
    for offset in range(days):
        day = first + timedelta(days=offset)
        starts = [start for start in day_starts(day, kind, zone=zone, state=state)
                  if _fits(start, kind, now=now, zone=zone, busy=busy, per_day=per_day)]
        if wish.part is not None:
            low, high = wish.part
            within = [start for start in starts if low <= start.astimezone(zone).time() < high]
            starts = within
        if wish.at is not None and (wish.day is None or offset == 0):
            wanted = datetime.combine(day, wish.at, tzinfo=zone).astimezone(UTC)
            starts.sort(key=lambda start: (abs(start - wanted), start))
        found.extend(starts[: limit - len(found)])
        if len(found) >= limit:
            break
    return found
