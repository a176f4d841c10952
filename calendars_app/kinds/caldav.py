"""CalDAV calendars (Nextcloud, mailbox.org, iCloud, Google's CalDAV endpoint,
Radicale, …) through the `caldav` client and `icalendar` events.

Writes are conditional (RFC 4791 §5.3.2, RFC 7232): a new event is PUT with
`If-None-Match: *` (it must not exist yet), a change or a removal with `If-Match` and
the ETag we last saw; a 412 is `Conflict`. Every request is bounded by
CALENDAR_TIMEOUT_SEC (connect and each read)."""
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from urllib.parse import urljoin
from zoneinfo import ZoneInfo

import caldav
import icalendar
import recurring_ical_events
import requests
from caldav.elements import dav
from caldav.lib import error as dav_error
from django.core.cache import cache

from calendars_app.kinds.base import (
    Conflict,
    EventDraft,
    NotFound,
    Provider,
    Unauthorized,
    Unavailable,
    Written,
    host_check,
    timeout,
)

UNREACHABLE = "Der Kalenderserver antwortet nicht (nicht erreichbar oder zu langsam)."
REFUSED_LOGIN = "Der Kalenderserver lehnt die Anmeldung ab: Benutzername oder App-Passwort ist falsch."
NO_CALENDAR = "Unter dieser Adresse wurde kein Kalender gefunden."
SERVER_FAILED = "Der Kalenderserver hat einen Fehler gemeldet (HTTP {status})."

CALENDARSERVER = "http://calendarserver.org/ns/"
CTAG_QUERY = ('<?xml version="1.0" encoding="utf-8"?>\n<d:propfind xmlns:d="DAV:" xmlns:cs="http://calendarserver.org/ns/">'
              "<d:prop><cs:getctag/></d:prop></d:propfind>")
# The kept busy times of a calendar: one entry per calendar, gone after an hour unused,
# never more than a couple of months of a calendar nor a calendar too full to be worth it.
KEPT_SEC = 3600
KEPT_DAYS = timedelta(days=62)
KEPT_SPANS = 5000


class CalDavProvider(Provider):
    def _client(self) -> caldav.DAVClient:
        host_check(self.calendar.url)
        # Basic authentication sent with the first request (app passwords are Basic
        # everywhere): no unauthenticated round trip first, which servers may answer slowly
        # (Radicale delays failed logins). requests' timeout: the connect and every read.
        auth = requests.auth.HTTPBasicAuth(self.settings.get("username", ""), self.secrets.get("password", ""))
        return caldav.DAVClient(url=self.calendar.url, auth=auth, timeout=timeout())  # type: ignore[arg-type]

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except (requests.Timeout, requests.ConnectionError) as exc:
            raise Unavailable(UNREACHABLE) from exc
        except dav_error.AuthorizationError as exc:
            raise Unauthorized(REFUSED_LOGIN) from exc
        except dav_error.NotFoundError as exc:
            raise NotFound(NO_CALENDAR) from exc
        except (dav_error.DAVError, requests.RequestException, ValueError) as exc:
            text = str(exc)
            if "401" in text or "403" in text:
                raise Unauthorized(REFUSED_LOGIN) from exc
            if "404" in text:
                raise NotFound(NO_CALENDAR) from exc
            raise Unavailable(UNREACHABLE) from exc

    def _request(self, client: caldav.DAVClient, url: str, method: str, body: str = "",
                 headers: dict[str, str] | None = None) -> Any:
        response = client.request(url, method, body, headers or {})
        status = int(response.status)
        if status in (401, 403):
            raise Unauthorized(REFUSED_LOGIN)
        if status == 412:
            raise Conflict("Der Termin wurde inzwischen geändert.")
        if status == 404:
            raise NotFound("Der Termin ist nicht mehr im Kalender.")
        if status >= 400:
            raise Unavailable(SERVER_FAILED.format(status=status))
        return response

    def check(self) -> None:
        with self._errors():
            client = self._client()
            calendar = client.calendar(url=self.calendar.url)
            found = calendar.get_properties([dav.ResourceType()])
            kinds = str(found.get(dav.ResourceType.tag, ""))
            if "calendar" not in kinds:
                raise NotFound(NO_CALENDAR)

    def _zone(self) -> ZoneInfo:
        return ZoneInfo(self.settings.get("timeZone") or "Europe/Berlin")

    def busy(self, start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
        with self._errors():
            return _busy_read(self._client(), self.calendar.url, start, end, self._zone())

    def busy_cached(self, start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
        """The busy times kept per calendar in Django's cache, with the collection's
        ctag (CalendarServer's getctag: it changes with every change in the calendar,
        whoever made it) read before each use: one small PROPFIND instead of the
        calendar-query and the parsing of its events. A server without a ctag is read
        afresh each time (and not asked for one again while that answer is kept)."""
        zone = self._zone()
        source = [self.calendar.url, self.settings.get("username", ""), zone.key]
        key = f"calendars:busy:v1:{self.calendar.pk}"
        with self._errors():
            client = self._client()
            kept = cache.get(key)
            if not isinstance(kept, dict) or kept.get("source") != source:
                kept = None
            if kept is not None and not kept["ctag"]:
                return _busy_read(client, self.calendar.url, start, end, zone)
            # The ctag first, then the events: a change between the two is read with the
            # events and kept under the older ctag, so the next call reads again. The
            # other way round, events older than their ctag would be kept as current.
            ctag = self._ctag(client)
            if not ctag:
                cache.set(key, {"source": source, "ctag": ""}, KEPT_SEC)
                return _busy_read(client, self.calendar.url, start, end, zone)
            read_from, read_to = start, end
            if kept is not None and kept["ctag"] == ctag:
                if kept["start"] <= start and end <= kept["end"]:
                    return _within(kept["spans"], start, end)
                # the same calendar asked about more days: the days kept and these, read at once
                if max(end, kept["end"]) - min(start, kept["start"]) <= KEPT_DAYS:
                    read_from, read_to = min(start, kept["start"]), max(end, kept["end"])
            spans = _busy_read(client, self.calendar.url, read_from, read_to, zone)
            if len(spans) <= KEPT_SPANS:
                cache.set(key, {"source": source, "ctag": ctag, "start": read_from, "end": read_to, "spans": spans},
                          KEPT_SEC)
        return _within(spans, start, end)

    def _ctag(self, client: caldav.DAVClient) -> str:
        """The collection's getctag, or "" where the server has none (or refuses to say)."""
        response = client.request(self.calendar.url, "PROPFIND", CTAG_QUERY,
                                  {"Depth": "0", "Content-Type": "application/xml; charset=utf-8"})
        if int(response.status) != 207 or response.tree is None:
            return ""
        found = response.tree.find(f".//{{{CALENDARSERVER}}}getctag")
        return (found.text or "").strip() if found is not None else ""

    def create(self, draft: EventDraft) -> Written:
        with self._errors():
            client = self._client()
            url = urljoin(self.calendar.url.rstrip("/") + "/", f"{draft.uid}.ics")
            response = self._request(client, url, "PUT", _ical(draft),
                                     {"If-None-Match": "*", "Content-Type": "text/calendar; charset=utf-8"})
            return Written(external_id=url, etag=_etag(response) or self._etag_of(client, url))

    def move(self, written: Written, draft: EventDraft) -> Written:
        with self._errors():
            client = self._client()
            headers = {"Content-Type": "text/calendar; charset=utf-8"}
            if written.etag:
                headers["If-Match"] = written.etag
            response = self._request(client, written.external_id, "PUT", _ical(draft), headers)
            return Written(external_id=written.external_id,
                           etag=_etag(response) or self._etag_of(client, written.external_id))

    def cancel(self, written: Written) -> None:
        with self._errors():
            client = self._client()
            try:
                self._request(client, written.external_id, "DELETE", "",
                              {"If-Match": written.etag} if written.etag else {})
            except NotFound:
                return  # gone already: what a cancellation wants

    def _etag_of(self, client: caldav.DAVClient, url: str) -> str:
        return _etag(self._request(client, url, "HEAD"))


def _etag(response: Any) -> str:
    headers = getattr(response, "headers", None) or {}
    return str(headers.get("ETag") or headers.get("etag") or "")


def _busy_read(client: caldav.DAVClient, url: str, start: datetime, end: datetime,
               zone: ZoneInfo) -> list[tuple[datetime, datetime]]:
    """The busy (start, end) of the events in [start, end), sorted: one calendar-query."""
    spans: list[tuple[datetime, datetime]] = []
    # The server filters by the time range (recurrences included); a recurring event
    # is expanded here, the rest read as they are (the caldav client's own expansion of
    # every event took ten times as long).
    for item in client.calendar(url=url).search(start=start, end=end, event=True, expand=False):
        instance = item.icalendar_instance
        components = instance.walk("VEVENT")
        if any(component.get("rrule") is not None for component in components):
            components = recurring_ical_events.of(instance).between(start, end)
        for component in components:
            span = _span(component, zone)
            if span is not None and span[0] < end and span[1] > start:
                spans.append(span)
    return sorted(spans)


def _within(spans: list[tuple[datetime, datetime]], start: datetime,
            end: datetime) -> list[tuple[datetime, datetime]]:
    return [span for span in spans if span[0] < end and span[1] > start]


def _moment(value: Any, zone: ZoneInfo) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=zone)
    if isinstance(value, date):  # an all-day event: the whole local day
        return datetime.combine(value, time(0), tzinfo=zone)
    raise ValueError("no time")


def _span(component: Any, zone: ZoneInfo) -> tuple[datetime, datetime] | None:
    """The busy (start, end) of a VEVENT, or None for a free, cancelled or broken one."""
    if str(component.get("status") or "").upper() == "CANCELLED":
        return None
    if str(component.get("transp") or "").upper() == "TRANSPARENT":
        return None
    try:
        start = _moment(component.get("dtstart").dt, zone)
        if component.get("dtend") is not None:
            end = _moment(component.get("dtend").dt, zone)
        elif component.get("duration") is not None:
            end = start + component.get("duration").dt
        else:
            end = start + (timedelta(days=1) if not isinstance(component.get("dtstart").dt, datetime)
                           else timedelta(0))
    except (AttributeError, ValueError, TypeError):
        return None
    return start.astimezone(UTC), end.astimezone(UTC)


def _ical(draft: EventDraft) -> str:
    calendar = icalendar.Calendar()
    calendar.add("prodid", "-//Stimmwerk//Termine//DE")
    calendar.add("version", "2.0")
    event = icalendar.Event()
    event.add("uid", draft.uid)
    event.add("dtstamp", datetime.now(UTC))
    event.add("dtstart", draft.start.astimezone(ZoneInfo(draft.time_zone)))
    event.add("dtend", draft.end.astimezone(ZoneInfo(draft.time_zone)))
    event.add("summary", draft.summary)
    event.add("description", draft.description)
    event.add("status", "CONFIRMED")
    calendar.add_component(event)
    calendar.add_missing_timezones()
    return calendar.to_ical().decode()


