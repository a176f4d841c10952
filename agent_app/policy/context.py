"""The context lines of the system prompt (see the package's docstring) and what the
policy knows besides the history."""
import re
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.utils import timezone

from agent_app.policy.arguments import property_spec
from console.phone import InvalidPhoneNumber, to_e164
from gateway_app.providers.mock import guess_language

DEFAULT_ZONE = "Europe/Berlin"

_CONTEXT_LINE = re.compile(
    r"^[\s>*•-]*(datum und uhrzeit|anrufernummer|kanal|weiterleitungsziele)\s*:\s*(.*?)\s*$",
    re.IGNORECASE | re.MULTILINE)
_ISO_NOW = re.compile(r"(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)"
                      r"(?:\s*\(([A-Za-z_+\-]+(?:/[A-Za-z_+\-]+)*)\))?")
_GERMAN_MONTHS = ("januar", "februar", "märz", "april", "mai", "juni", "juli", "august", "september", "oktober",
                  "november", "dezember")
_TODAY_IS = re.compile(
    r"heute ist\D{0,30}?(\d{1,2})\.\s?(?:(\d{1,2})\.|(" + "|".join(_GERMAN_MONTHS) + r"))\s?(\d{4})"
    r"\D{0,12}?(\d{1,2})[:.](\d{2})(?:\s*uhr)?(?:\s*\(([A-Za-z_+\-]+(?:/[A-Za-z_+\-]+)*)\))?",
    re.IGNORECASE)
_SPOKEN_CHANNEL = re.compile(r"telefon|sprach|anruf|voice|phone|call|browser", re.IGNORECASE)
_TARGET = re.compile(r"^\s*(.+?)\s*(?:\(\s*([+\d][\d\s/()-]*)\s*\))?\s*$")


def _zone(name):
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def _now_of(system):
    """Now on the tenant's clock from the system prompt, else the clock's in Berlin."""
    for key, value in _lines(system):
        if key == "datum und uhrzeit":
            match = _ISO_NOW.search(value)
            if match:
                try:
                    moment = datetime.fromisoformat(match.group(1).replace(" ", "T").replace("Z", "+00:00"))
                except ValueError:
                    moment = None
                if moment is not None:
                    zone = _zone(match.group(2)) if match.group(2) else None
                    if moment.tzinfo is None:
                        return moment.replace(tzinfo=zone or ZoneInfo(DEFAULT_ZONE))
                    return moment.astimezone(zone) if zone else moment
    match = _TODAY_IS.search(system)
    if match:
        day, month_digits, month_name, year, hour, minute, zone_name = match.groups()
        month = int(month_digits) if month_digits else _GERMAN_MONTHS.index(month_name.lower()) + 1
        zone = (_zone(zone_name) if zone_name else None) or ZoneInfo(DEFAULT_ZONE)
        try:
            return datetime(int(year), month, int(day), int(hour), int(minute), tzinfo=zone)
        except ValueError:
            pass
    return timezone.now().astimezone(ZoneInfo(DEFAULT_ZONE))


def _lines(system):
    return [(match.group(1).lower(), match.group(2)) for match in _CONTEXT_LINE.finditer(system)]


def e164(raw):
    try:
        return to_e164(raw)
    except InvalidPhoneNumber:
        return None


@dataclass(frozen=True)
class Context:
    """What the policy knows besides the history: the system prompt's lines, the tools."""

    now: datetime
    language: str  # de or en
    spoken: bool
    caller: str | None  # E.164
    targets: tuple  # names transfer_call may reach
    tools: dict  # name → parameters schema, of the offered tools

    @classmethod
    def of(cls, request):
        system = "\n".join(m["content"] or "" for m in request.messages if m["role"] == "system")
        lines = _lines(system)
        caller = next((e164(value) for key, value in lines if key == "anrufernummer"), None)
        spoken = any(key == "kanal" and _SPOKEN_CHANNEL.search(value) for key, value in lines)
        tools = {tool["function"]["name"]: tool["function"].get("parameters") or {"type": "object"}
                 for tool in request.tools}
        named = []
        for key, value in lines:
            if key == "weiterleitungsziele":
                for part in value.split(";"):
                    match = _TARGET.match(part)
                    if match and match.group(1).strip(" ,"):
                        named.append(match.group(1).strip(" ,"))
        enum = property_spec(tools.get("transfer_call") or {}, "target").get("enum")
        if isinstance(enum, list):
            targets = tuple(name for name in enum if isinstance(name, str) and name)
        else:
            targets = tuple(named)
        users = " ".join(m["content"] or "" for m in request.messages if m["role"] == "user")
        language = request.language if request.language in ("de", "en") else guess_language(users or system)
        return cls(now=_now_of(system), language=language, spoken=spoken, caller=caller, targets=targets,
                   tools=tools)

