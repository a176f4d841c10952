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
    """A parsed token: either an offset from now, or a day part `days` from today."""

    token: str
    ahead: timedelta | None = None
    days: int = 0
    day_part: str | None = None

    def resolve(self, *, now, time_zone):
        """The aware datetime this token means at `now` for a tenant in `time_zone`."""
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
