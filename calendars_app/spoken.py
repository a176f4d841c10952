"""German time understanding for appointments: what a caller's words wish for
("nächsten Dienstag", "übermorgen um halb elf", "Dienstag vormittag", "in zwei Wochen",
"am 3.12.") through the entities speech recognition already reads
(speech_app.entities), and a moment said back in words ("Dienstag, den dritten
Dezember, um halb elf"), on the tenant's clock."""
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from num2words import num2words

from speech_app.entities import entities

WEEKDAY_NAMES = ("Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag")
MONTH_NAMES = ("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
               "November", "Dezember")
# A part of the day a caller names, as wall-clock hours.
DAY_PARTS = (
    (re.compile(r"\bvormittags?\b|\bmorgens\b|\bam morgen\b|\bfrüh\b"), (time(7, 0), time(12, 0))),
    (re.compile(r"\bnachmittags?\b"), (time(12, 0), time(18, 0))),
    (re.compile(r"\bmittags?\b"), (time(11, 30), time(14, 0))),
    (re.compile(r"\babends?\b"), (time(17, 0), time(22, 0))),
)
_NEXT_WEEK = re.compile(r"\bnächste[nr]? woche\b|\bkommende[nr]? woche\b")


@dataclass(frozen=True)
class Wish:
    """What a caller asked for: a day, a time of day, a part of the day (each optional)."""

    day: date | None = None
    at: time | None = None
    part: tuple[time, time] | None = None


def wish_of(text: str | None, *, now: datetime, time_zone: str) -> Wish:
    """The Wish in `text` (German words, or an ISO 8601 date or time) at `now`."""
    text = " ".join(str(text or "").split())
    if not text:
        return Wish()
    zone = ZoneInfo(time_zone)
    local_now = now.astimezone(zone)
    try:
        moment = datetime.fromisoformat(text)
        moment = moment if moment.tzinfo else moment.replace(tzinfo=zone)
        local = moment.astimezone(zone)
        only_date = len(text) <= 10
        return Wish(day=local.date(), at=None if only_date else local.time().replace(second=0, microsecond=0))
    except ValueError:
        pass
    lowered = text.casefold()
    day = at = None
    for found in entities(text, now=local_now):
        if found["type"] == "datetime" and day is None:
            moment = datetime.fromisoformat(found["value"]).astimezone(zone)
            day, at = moment.date(), moment.time()
        elif found["type"] == "date" and day is None:
            day = date.fromisoformat(found["value"])
        elif found["type"] == "time" and at is None:
            at = time.fromisoformat(found["value"])
    if _NEXT_WEEK.search(lowered):
        monday = local_now.date() + timedelta(days=7 - local_now.weekday())
        if day is None:
            day = monday
        elif day < monday:
            day += timedelta(days=7)
    part = next((hours for pattern, hours in DAY_PARTS if pattern.search(lowered)), None)
    if at is not None and part is not None and at.hour < 12 and part[0] >= time(12, 0):
        at = at.replace(hour=at.hour + 12)  # "nachmittags um drei"
    return Wish(day=day, at=at, part=part)


def _number(value: int) -> str:
    return str(num2words(value, lang="de"))


def time_in_words(moment: time) -> str:
    """"um halb elf", "um zehn Uhr", "um Viertel nach neun", "um vierzehn Uhr zwanzig"."""
    hour, minute = moment.hour, moment.minute
    next_hour = _number((hour % 12) + 1) if hour % 12 != 11 else "zwölf"
    if minute == 0:
        return f"um {_number(hour)} Uhr".replace("um eins Uhr", "um ein Uhr")
    if minute == 30 and 6 <= hour <= 12:
        return f"um halb {next_hour}"
    if minute == 15 and 6 <= hour <= 12:
        return f"um Viertel nach {_number(hour)}"
    if minute == 45 and 6 <= hour <= 12:
        return f"um Viertel vor {next_hour}"
    return f"um {_number(hour)} Uhr {_number(minute)}".replace("um eins Uhr", "um ein Uhr")


def said_in_words(moment: datetime, *, time_zone: str) -> str:
    """"Dienstag, den dritten Dezember, um halb elf" (on the tenant's clock)."""
    local = moment.astimezone(ZoneInfo(time_zone))
    ordinal = str(num2words(local.day, lang="de", to="ordinal")) + "n"
    return (f"{WEEKDAY_NAMES[local.weekday()]}, den {ordinal} {MONTH_NAMES[local.month - 1]}, "
            f"{time_in_words(local.time())}")


def said_in_figures(moment: datetime, *, time_zone: str) -> str:
    """"Dienstag, 03.12.2026, 10:30 Uhr": the transcript's note and the event's text."""
    local = moment.astimezone(ZoneInfo(time_zone))
    return f"{WEEKDAY_NAMES[local.weekday()]}, {local:%d.%m.%Y}, {local:%H:%M} Uhr"
