"""One utterance of the caller, read for what the policy needs: its words, a phone
number, yes or no, a wished time."""
import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from functools import cached_property

from agent_app.policy.context import e164
from agent_app.policy.cues import (
    EN_CLOCK,
    EN_DAY,
    EN_WEEKDAYS,
    FILLERS,
    NO,
    PART_END,
    PART_START,
    PARTS,
    SOON,
    WORD,
    YES,
    english_digits,
)
from speech_app.entities import entities, number_of

# An utterance is read for numbers and times in its first characters only (a caller's
# sentence is far shorter; a client may send 400,000 characters).
MAX_HEARD_CHARS = 2000


@dataclass
class When:
    """A wished time, as far as it was said."""

    day: date | None = None
    clock: time | None = None
    part: str | None = None  # am, pm, evening
    soon: bool = False
    words: str = ""  # an answer the policy could not read, kept as said
    said: list = field(default_factory=list)  # the caller's own words for it

    def known(self):
        return bool(self.day or self.clock or self.part or self.soon or self.words)

    def merge(self, other):
        if other.day or other.clock or other.part:
            self.soon, self.words = False, ""
        self.day = other.day or self.day
        self.clock = other.clock or self.clock
        self.part = other.part or (None if other.clock else self.part)
        self.soon = self.soon or (other.soon and not (self.day or self.clock or self.part))
        self.words = other.words or self.words
        self.said += [words for words in other.said if words not in self.said]


# Compounds Whisper writes apart ("zu rücken" for "zurück", "Rück-Ruf"): joined again
# before the caller's words are read for a wish.
SPLIT_COMPOUND = re.compile(r"\b(zu|rück|zurück)[\s-]+(rück|ruf)", re.IGNORECASE)


class Heard:
    """One utterance of the caller, read for what the policy needs."""

    def __init__(self, text, context):
        self.text = " ".join((text or "").split())
        self.low = SPLIT_COMPOUND.sub(r"\1\2", self.text.lower())
        self.context = context

    @cached_property
    def words(self):
        return WORD.findall(self.low)

    @cached_property
    def content(self):
        """The words that carry something (not greetings, fillers, yes or no)."""
        return [word for word in self.words if word not in FILLERS]

    @cached_property
    def _entities(self):
        text = self.text[:MAX_HEARD_CHARS]
        return entities(english_digits(text) if self.context.language == "en" else text, now=self.context.now)

    @cached_property
    def phone(self):
        """The last phone number said, in E.164 (a correction names the right one last)."""
        found = [e164(entity["value"]) for entity in self._entities if entity["type"] == "phone"]
        found = [number for number in found if number]
        return found[-1] if found else None

    @cached_property
    def loose_phone(self):
        """A number said when one was asked for, in whatever words: all its digits, a
        missing leading zero added."""
        if self.phone:
            return self.phone
        text = self.low[:MAX_HEARD_CHARS]
        text = english_digits(text) if self.context.language == "en" else text
        digits = ""
        for token in re.findall(r"\+|\d+|[a-zäöüß]+", text):
            if token.isdigit() or token == "+":
                digits += token
            elif token not in ("ein", "eine", "einen", "einer"):
                value = number_of(token)
                if value is not None and value < 100:
                    digits += str(value)
        national = digits.lstrip("+")
        if not 6 <= len(national) <= 15:
            return None
        if not digits.startswith(("+", "0")):
            digits = ("+" if digits.startswith("49") and len(digits) > 11 else "0") + digits
        return e164(digits)

    @cached_property
    def no(self):
        return bool(NO.search(self.low))

    @cached_property
    def yes(self):
        return not self.no and bool(YES.search(self.low))

    @cached_property
    def when(self):
        """The time said in this utterance, or None."""
        found = When()
        now = self.context.now
        if self.context.language == "en":
            self._english_when(found)
        else:
            for entity in self._entities:
                if entity["type"] == "datetime":
                    moment = datetime.fromisoformat(entity["value"])
                    found.day, found.clock = moment.date(), moment.time().replace(tzinfo=None)
                elif entity["type"] == "date":
                    found.day = date.fromisoformat(entity["value"])
                elif entity["type"] == "time":
                    found.clock = time.fromisoformat(entity["value"])
                else:
                    continue
                found.said.append(entity["text"])
            if re.search(r"\bheute\s+(?:früh|morgen)\b", self.low):
                found.day, found.part = now.date(), "am"
        for part, cue in PARTS:
            match = cue.search(self.low)
            if match and found.part is None:
                found.part = part
                found.said.append(match.group(0))
        if not (found.day or found.clock or found.part):
            match = SOON.search(self.low)
            if match:
                found.soon = True
                found.said.append(match.group(0))
        return found if (found.day or found.clock or found.part or found.soon) else None

    def _english_when(self, found):
        today = self.context.now.date()
        low = english_digits(self.low)
        day = EN_DAY.search(low)
        if day:
            word = day.group(1).lower()
            if word in ("today", "tonight"):
                found.day = today
            elif word == "tomorrow":
                found.day = today + timedelta(days=1)
            elif word == "day after tomorrow":
                found.day = today + timedelta(days=2)
            else:
                weekday = EN_WEEKDAYS.index(word.split()[-1])
                ahead = (weekday - today.weekday()) % 7 or 7
                found.day = today + timedelta(days=ahead)
            found.said.append(day.group(0))
        clock = EN_CLOCK.search(low)
        if clock:
            hour = int(clock.group(1) or clock.group(4))
            minute = int(clock.group(2) or clock.group(5) or 0)
            marker = (clock.group(3) or clock.group(6) or "").replace(".", "")
            if marker == "pm" and hour < 12:
                hour += 12
            elif marker == "am" and hour == 12:
                hour = 0
            elif marker not in ("am", "pm") and 1 <= hour <= 6:
                hour += 12  # a business line's hours: "at three" is 15:00
            if hour <= 23 and minute <= 59:
                found.clock = time(hour, minute)
                found.said.append(clock.group(0).strip())


def moment_of(when, context):
    """The wished time as a moment on the tenant's clock, or None (not said, or only
    "as soon as possible" or words the policy cannot read)."""
    if not (when.day or when.clock or when.part):
        return None
    now = context.now
    clock = when.clock or PART_START.get(when.part) or time(9)
    day = when.day
    if day is None:
        end = clock if when.clock else PART_END.get(when.part, clock)
        later_today = datetime.combine(now.date(), end, tzinfo=now.tzinfo) > now
        day = now.date() if later_today else now.date() + timedelta(days=1)
    moment = datetime.combine(day, clock, tzinfo=now.tzinfo)
    if moment < now:  # a day part already begun: from the next quarter hour
        moment = (now + timedelta(minutes=15 - now.minute % 15)).replace(second=0, microsecond=0)
    return moment

