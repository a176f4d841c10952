"""An assistant's appointment types (`appointmentTypes` of the assistant, docs/api.md
"Appointment types"): what a caller may book, read and checked here for the API and
the admin alike (registered with console.assistants.references).

A type as the API has it:
`{"name": "Erstgespräch", "durationMinutes": 30, "bufferBeforeMinutes": 0,
"bufferAfterMinutes": 10, "calendar": "cal_…", "hours": {"mon": [{"start": "09:00",
"end": "12:00"}, …], …}, "minNoticeMinutes": 120, "maxDaysAhead": 60, "maxPerDay": null,
"holidaysClosed": true}`. Hours are wall-clock times in the tenant's time zone; a day
left out is closed. A day's hours may also be written `{"start", "end"}`,
`["09:00", "12:00"]` or `"09:00-12:00"`, and several of them in a list.
"""
import re
from dataclasses import dataclass
from typing import Any

from calendars_app.models import Calendar

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
DAY_ALIASES = {
    **{day: day for day in DAYS},
    "monday": "mon", "tuesday": "tue", "wednesday": "wed", "thursday": "thu", "friday": "fri",
    "saturday": "sat", "sunday": "sun", "mo": "mon", "di": "tue", "mi": "wed", "do": "thu", "fr": "fri",
    "sa": "sat", "so": "sun", "montag": "mon", "dienstag": "tue", "mittwoch": "wed", "donnerstag": "thu",
    "freitag": "fri", "samstag": "sat", "sonntag": "sun",
}
DEFAULT_HOURS = {day: [{"start": "09:00", "end": "17:00"}] for day in ("mon", "tue", "wed", "thu", "fri")}
FIELDS = ("name", "durationMinutes", "bufferBeforeMinutes", "bufferAfterMinutes", "calendar", "hours",
          "minNoticeMinutes", "maxDaysAhead", "maxPerDay", "holidaysClosed")
MAX_TYPES = 20
_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$|^24:00$")
# (field, default, low, high)
NUMBERS: tuple[tuple[str, int | None, int, int], ...] = (("durationMinutes", None, 5, 480), ("bufferBeforeMinutes", 0, 0, 240), ("bufferAfterMinutes", 0, 0, 240),
           ("minNoticeMinutes", 120, 0, 60 * 24 * 30), ("maxDaysAhead", 60, 1, 365))


@dataclass(frozen=True)
class AppointmentType:
    name: str
    duration: int  # minutes
    buffer_before: int
    buffer_after: int
    calendar_id: str
    hours: dict[str, list[tuple[str, str]]]
    min_notice: int  # minutes
    max_days_ahead: int
    max_per_day: int | None
    holidays_closed: bool

    @classmethod
    def of(cls, value: dict[str, Any]) -> "AppointmentType":
        """A stored (clean) type."""
        return cls(name=value["name"], duration=value["durationMinutes"], buffer_before=value["bufferBeforeMinutes"],
                   buffer_after=value["bufferAfterMinutes"], calendar_id=value["calendar"],
                   hours={day: [(span["start"], span["end"]) for span in spans]
                          for day, spans in value["hours"].items()},
                   min_notice=value["minNoticeMinutes"], max_days_ahead=value["maxDaysAhead"],
                   max_per_day=value["maxPerDay"], holidays_closed=value["holidaysClosed"])


def types_of(assistant: Any) -> list[AppointmentType]:
    return [AppointmentType.of(value) for value in (getattr(assistant, "appointment_types", None) or [])]


def type_named(assistant: Any, name: str | None) -> AppointmentType | None:
    """The assistant's type of this name (case and spaces aside); the only one when no name is given."""
    types = types_of(assistant)
    if not name:
        return types[0] if len(types) == 1 else None
    wanted = " ".join(name.split()).casefold()
    return next((kind for kind in types if kind.name.casefold() == wanted), None)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def types_clean(*, tenant: Any, value: Any) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The stored form of `value` and its problems by path (`appointmentTypes[0].hours.mon`)."""
    problems: dict[str, list[str]] = {}

    def add(path: str, message: str) -> None:
        problems.setdefault(path, []).append(message)

    if value is None:
        return [], {}
    if not isinstance(value, list) or len(value) > MAX_TYPES:
        add("appointmentTypes", f"Send a list of at most {MAX_TYPES} appointment types.")
        return [], problems
    calendars = set(Calendar.objects.for_tenant(tenant).values_list("id", flat=True))
    cleaned, names = [], set()
    for index, item in enumerate(value):
        path = f"appointmentTypes[{index}]"
        if not isinstance(item, dict):
            add(path, "Send an object: {\"name\", \"durationMinutes\", \"calendar\", \"hours\", …}.")
            continue
        for key in sorted(set(item) - set(FIELDS)):
            add(f"{path}.{key}", f"Unknown field. Accepted: {', '.join(FIELDS)}.")
        kind: dict[str, Any] = {}
        name = item.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            add(f"{path}.name", "Send a name of 1 to 100 characters, e.g. Erstgespräch.")
        elif name.strip().casefold() in names:
            add(f"{path}.name", "Another appointment type has this name.")
        else:
            kind["name"] = " ".join(name.split())
            names.add(kind["name"].casefold())
        for field, default, low, high in NUMBERS:
            number: Any = item.get(field, default)
            if not _is_int(number) or not low <= int(number) <= high:
                add(f"{path}.{field}", f"Send a whole number from {low} to {high}.")
            else:
                kind[field] = number
        per_day = item.get("maxPerDay")
        if per_day is not None and (not _is_int(per_day) or not 1 <= per_day <= 1000):
            add(f"{path}.maxPerDay", "Send a whole number from 1 to 1000, or null for no cap.")
        else:
            kind["maxPerDay"] = per_day
        closed = item.get("holidaysClosed", True)
        if not isinstance(closed, bool):
            add(f"{path}.holidaysClosed", "Send true or false.")
        else:
            kind["holidaysClosed"] = closed
        calendar = item.get("calendar")
        if not isinstance(calendar, str) or calendar not in calendars:
            add(f"{path}.calendar", "Send the id of one of the tenant's calendars (cal_…, see GET /v2/calendars).")
        else:
            kind["calendar"] = calendar
        hours = _hours(item.get("hours", DEFAULT_HOURS), f"{path}.hours", add)
        if hours is not None:
            kind["hours"] = hours
        cleaned.append({field: kind[field] for field in FIELDS if field in kind})
    return (cleaned if not problems else []), problems


def _hours(value: Any, path: str, add: Any) -> dict[str, list[dict[str, str]]] | None:
    if not isinstance(value, dict):
        add(path, 'Send an object of weekdays, e.g. {"mon": [{"start": "09:00", "end": "12:00"}]}.')
        return None
    hours: dict[str, list[dict[str, str]]] = {}
    fine = True
    for key, spans in value.items():
        day = DAY_ALIASES.get(str(key).strip().lower())
        if day is None:
            add(f"{path}.{key}", "Not a weekday; use mon, tue, wed, thu, fri, sat, sun.")
            fine = False
            continue
        if spans is None:
            continue
        items = spans if isinstance(spans, list) and (not spans or not isinstance(spans[0], str)) else [spans]
        if isinstance(spans, list) and len(spans) == 2 and all(isinstance(x, str) for x in spans) and \
                all(_TIME.match(x) for x in spans):
            items = [spans]
        found = []
        for span in items:
            parsed = _span(span)
            if parsed is None:
                add(f"{path}.{key}", 'Send {"start": "09:00", "end": "12:00"} (HH:MM, the end after the start).')
                fine = False
                continue
            found.append(parsed)
        merged: list[list[str]] = []
        for start, end in sorted(found):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        if merged:
            hours.setdefault(day, [])
            hours[day] = [{"start": start, "end": end} for start, end in merged]
    if not fine:
        return None
    return {day: hours[day] for day in DAYS if day in hours}


def _span(span: Any) -> tuple[str, str] | None:
    if isinstance(span, dict) and set(span) <= {"start", "end"}:
        start, end = span.get("start"), span.get("end")
    elif isinstance(span, list | tuple) and len(span) == 2:
        start, end = span
    elif isinstance(span, str) and span.count("-") == 1:
        start, end = (part.strip() for part in span.split("-"))
    else:
        return None
    if not (isinstance(start, str) and isinstance(end, str) and _TIME.match(start) and _TIME.match(end)):
        return None
    return (start, end) if start < end else None
