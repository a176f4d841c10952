"""`preferred_at` tokens (CONTRACT §6) and the moment each one means for a tenant.

`asap`, `+<n>m`, `+<n>h`, `today-am`, `today-pm`, `tomorrow-am`, `tomorrow-pm`.
Day parts are read on the tenant's wall clock (its `time_zone`), so "tomorrow
morning" for a Berlin business is 09:00 in Berlin, whatever the server's zone.
"""
import re
import zoneinfo
from dataclasses import dataclass
from datetime import datetime, time, timedelta

# Where a day part begins on the tenant's wall clock. A day part that has already
# begun (today-am asked at 10:30) resolves to the moment of asking.
DAY_PARTS = {"am": time(9, 0), "pm": time(14, 0)}
# A relative token reaches at most a week ahead; further is no "preferred time" but a typo.
MAX_AHEAD = timedelta(days=7)

_RELATIVE = re.compile(r"^\+([1-9][0-9]{0,5})([mh])$")
_DAY_PART = re.compile(r"^(today|tomorrow)-(am|pm)$")

HELP = "Use asap, +<n>m, +<n>h (up to 7 days ahead), today-am, today-pm, tomorrow-am or tomorrow-pm."


class InvalidToken(ValueError):
    pass


@dataclass(frozen=True)
class PreferredTime:
    """A parsed token: either an offset from now, or a day part `days` from today; or
    (`from_words`, token "") a moment a caller named ("Dienstag um 10 Uhr")."""

    token: str
    ahead: timedelta | None = None
    days: int = 0
    day_part: str | None = None
    at: datetime | None = None

    def resolve(self, *, now, time_zone):
        """The aware datetime this token means at `now` for a tenant in `time_zone`."""
        if self.at is not None:
            return self.at
        if self.day_part is None:
            return now + self.ahead
        local_now = now.astimezone(zoneinfo.ZoneInfo(time_zone))
        day = local_now.date() + timedelta(days=self.days)
        start = datetime.combine(day, DAY_PARTS[self.day_part], tzinfo=local_now.tzinfo)
        return max(start, now)


def parse(token):
    """The PreferredTime of `token`, or InvalidToken with a message that lists the tokens."""
    if token == "asap":
        return PreferredTime(token, ahead=timedelta(0))
    relative = _RELATIVE.match(token)
    if relative:
        amount, unit = int(relative.group(1)), relative.group(2)
        ahead = timedelta(minutes=amount) if unit == "m" else timedelta(hours=amount)
        if ahead > MAX_AHEAD:
            raise InvalidToken(f"'{token}' is more than 7 days ahead. {HELP}")
        return PreferredTime(token, ahead=ahead)
    day_part = _DAY_PART.match(token)
    if day_part:
        return PreferredTime(token, days=1 if day_part.group(1) == "tomorrow" else 0, day_part=day_part.group(2))
    raise InvalidToken(f"'{token}' is not a preferred time. {HELP}")


# --- Words a caller says ("morgen Vormittag", "in zwei Stunden", "Dienstag um 10 Uhr") ---
# What an assistant's create_callback tool is given (the model passes the caller's
# words, or a token, or an ISO time). Read on the tenant's clock; what cannot be read
# is kept as words by the caller of `from_words` (None here).

WORDS_MAX_AHEAD = timedelta(days=14)
_NUMBER_WORDS = {
    "ein": 1, "eine": 1, "einer": 1, "einem": 1, "eins": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6,
    "sieben": 7, "acht": 8, "neun": 9, "zehn": 10, "elf": 11, "zwölf": 12, "fünfzehn": 15, "zwanzig": 20,
    "dreißig": 30, "vierzig": 40, "fünfundvierzig": 45, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "ten": 10, "fifteen": 15, "twenty": 20, "thirty": 30, "an": 1, "a": 1,
}
_WEEKDAYS = {"montag": 0, "dienstag": 1, "mittwoch": 2, "donnerstag": 3, "freitag": 4, "samstag": 5, "sonnabend": 5,
             "sonntag": 6, "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5,
             "sunday": 6}
_SOON = re.compile(r"\b(sofort|gleich|jetzt|asap|so ?bald wie möglich|so schnell wie möglich|schnellstmöglich|"
                   r"baldmöglichst|möglichst bald|as soon as possible|right away|now)\b")
_IN = re.compile(r"\bin (?:(\d{1,3})|(\w+)) ?(minuten|minute|min|stunden|stunde|std|minutes|minute|hours|hour)\b")
_HALF_HOUR = re.compile(r"\bin (?:einer )?(halben stunde|half an hour|viertelstunde|dreiviertelstunde)\b")
_CLOCKS = (
    re.compile(r"\b(?:um|gegen|ab|at) (\d{1,2})(?:[:.](\d{2})| ?uhr(?: ?(\d{1,2}))?)?(?: ?(am|pm|o'clock))?\b"),
    re.compile(r"\b(\d{1,2})(?:[:.](\d{2})| ?uhr(?: ?(\d{1,2}))?| ?(am|pm|o'clock))"),
)
_AM = re.compile(r"\b(früh|vormittags?|morgens|morning|am vormittag)\b")
_PM = re.compile(r"\b(mittags?|nachmittags?|afternoon|am nachmittag)\b")
_EVENING = re.compile(r"\b(abends?|evening|am abend)\b")


def _words_number(text):
    return int(text) if text.isdigit() else _NUMBER_WORDS.get(text)


def _parts_of(text):
    """(days ahead or None, weekday or None, part or None, (hour, minute) or None)."""
    days = weekday = None
    if re.search(r"\bübermorgen\b", text):
        days = 2
    elif re.search(r"\b(morgen|tomorrow)\b", text) and not re.search(r"\bheute morgen\b", text):
        days = 1
    elif re.search(r"\b(heute|today|tonight)\b", text):
        days = 0
    for name, number in _WEEKDAYS.items():
        if re.search(rf"\b{name}s?\b", text):
            weekday = number
    part = None
    if re.search(r"\bheute morgen\b", text) or _AM.search(text):
        part = "am"
    elif _PM.search(text):
        part = "pm"
    elif _EVENING.search(text):
        part = "evening"
    clock = None
    match = next((found for found in (clock_re.search(text) for clock_re in _CLOCKS) if found), None)
    if match:
        hour = int(match.group(1))
        minute = int(match.group(2) or match.group(3) or 0)
        if match.group(4) == "pm" and hour < 12:
            hour += 12
        if part in ("pm", "evening") and hour < 12:
            hour += 12
        if hour <= 23 and minute <= 59:
            clock = (hour, minute)
    return days, weekday, part, clock


def from_words(text, *, now, time_zone):
    """The PreferredTime that a caller's words (German or English), a token or an ISO
    8601 time mean at `now` on the tenant's clock, or None when they name no moment
    this reads (or one in the past, or more than 14 days ahead)."""
    text = " ".join(str(text or "").strip().split())
    if not text:
        return None
    try:
        return parse(text)
    except InvalidToken:
        pass
    zone = zoneinfo.ZoneInfo(time_zone)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = None
    if moment is not None:
        moment = moment if moment.tzinfo else moment.replace(tzinfo=zone)
        return PreferredTime("", at=moment) if now - timedelta(minutes=5) <= moment <= now + WORDS_MAX_AHEAD else None
    lowered = text.casefold()
    if _SOON.search(lowered):
        return PreferredTime("asap", ahead=timedelta(0))
    half = _HALF_HOUR.search(lowered)
    if half:
        minutes = {"halben stunde": 30, "half an hour": 30, "viertelstunde": 15, "dreiviertelstunde": 45}[half.group(1)]
        return PreferredTime(f"+{minutes}m", ahead=timedelta(minutes=minutes))
    relative = _IN.search(lowered)
    if relative:
        amount = _words_number(relative.group(1) or relative.group(2) or "")
        if amount:
            unit = "m" if relative.group(3).startswith("min") else "h"
            ahead = timedelta(minutes=amount) if unit == "m" else timedelta(hours=amount)
            if ahead <= MAX_AHEAD:
                return PreferredTime(f"+{amount}{unit}", ahead=ahead)
    days, weekday, part, clock = _parts_of(lowered)
    if days is None and weekday is None and part is None and clock is None:
        return None
    local_now = now.astimezone(zone)
    if weekday is not None and days is None:
        days = (weekday - local_now.weekday()) % 7
    if clock is None and part in ("am", "pm") and days in (0, 1) and weekday is None:
        return parse(f"{'today' if days == 0 else 'tomorrow'}-{part}")
    if clock is None:
        clock = {"am": (9, 0), "pm": (14, 0), "evening": (18, 0)}.get(part, (9, 0))
    day = local_now.date() + timedelta(days=days or 0)
    moment = datetime.combine(day, time(*clock), tzinfo=zone)
    if moment < now and days is None:
        moment += timedelta(days=1)  # "um 10 Uhr" said at 11: tomorrow
    if weekday is not None and moment < now:
        moment += timedelta(days=7)  # "Dienstag" said on a Tuesday afternoon: next week
    if moment < now - timedelta(minutes=5) or moment > now + WORDS_MAX_AHEAD:
        return None
    return PreferredTime("", at=max(moment, now))
