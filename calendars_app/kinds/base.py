"""What every kind of calendar offers the booking services: a connection check, the
busy times of a span, and conditional writes of events.

A provider never raises anything but `Unavailable` (the calendar did not answer in
time, answered 5xx, or could not be reached), `Unauthorized`, `NotFound` and
`Conflict` (the slot or the event changed under us: a CalDAV 412, Graph's 409/412,
Cal.com's 409), so that the services can answer a tool call in bounded time with a
result the agent can apologise with.
"""
import socket
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from calendars_app.models import Calendar
from console import outbound, sealing

SEAL_PURPOSE = "calendars_app.secrets:v1"


class ProviderError(Exception):
    """The message is safe to show the tenant (German)."""


class Unavailable(ProviderError):
    pass


class Unauthorized(ProviderError):
    pass


class NotFound(ProviderError):
    pass


class Conflict(ProviderError):
    pass


@dataclass(frozen=True)
class EventDraft:
    """An event to write: its times (aware), the summary and the description."""

    uid: str
    start: datetime
    end: datetime
    summary: str
    description: str
    caller_name: str
    caller_e164: str
    time_zone: str


@dataclass(frozen=True)
class Written:
    """Where an event is (href, Graph id or Cal.com uid) and the version it has (ETag; "" where none)."""

    external_id: str
    etag: str = ""


def secrets_of(calendar: Calendar) -> dict[str, str]:
    return sealing.unseal_values(calendar.secrets_sealed, purpose=SEAL_PURPOSE)


def secrets_seal(values: dict[str, str]) -> str:
    return sealing.seal_values(values, purpose=SEAL_PURPOSE)


def timeout() -> float:
    return float(settings.CALENDAR_TIMEOUT_SEC)


def host_check(url: str) -> None:
    """Unavailable unless every address the URL's host resolves to may be reached
    (console.outbound; the development switch allows every address). Checked before
    each request: the URL was admitted on save, its name may point elsewhere now."""
    parts = urlsplit(url)
    try:
        port = outbound.url_port(parts)
        infos = socket.getaddrinfo(parts.hostname or "", port, type=socket.SOCK_STREAM)
    except (OSError, ValueError, outbound.InvalidPort):
        infos = []
    allow = settings.OUTBOUND_ALLOW_PRIVATE_TARGETS
    if not infos or not all(outbound.address_allowed(info[4][0], allow_private=allow) for info in infos):
        raise Unavailable("Der Kalenderserver ist nicht erreichbar (keine öffentliche Adresse).")


class Provider:
    """One calendar of a kind. Times are aware datetimes; `busy` gives (start, end) pairs."""

    def __init__(self, calendar: Calendar) -> None:
        self.calendar = calendar
        self.secrets = secrets_of(calendar)
        self.settings: dict[str, Any] = dict(calendar.settings or {})

    def check(self) -> None:
        raise NotImplementedError

    def busy(self, start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
        """Read afresh from the calendar: what a booking checks right before its write."""
        raise NotImplementedError

    def busy_cached(self, start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
        """The same busy times for an offer of slots, from a copy kept while the calendar
        says it has not changed where the kind can tell (CalDAV's ctag); else read afresh."""
        return self.busy(start, end)

    def create(self, draft: EventDraft) -> Written:
        raise NotImplementedError

    def move(self, written: Written, draft: EventDraft) -> Written:
        raise NotImplementedError

    def cancel(self, written: Written) -> None:
        raise NotImplementedError
