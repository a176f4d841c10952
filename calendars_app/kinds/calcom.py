"""Cal.com (API v2): one event type of the account whose API key is given.

Cal.com knows its own availability, so its busy times are what its slots leave out:
`GET /v2/slots?eventTypeId&start&end` (header `cal-api-version: 2024-09-04`), and a
span of the event type's length from each offered start is free. A booking:
`POST /v2/bookings` (`cal-api-version: 2024-08-13`; 409 or 400 "not available" when the
slot went meanwhile); a move: `POST /v2/bookings/{uid}/reschedule`; a cancellation:
`POST /v2/bookings/{uid}/cancel`."""
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from django.conf import settings

from calendars_app.kinds.base import EventDraft, NotFound, Provider, Unavailable, Written
from calendars_app.kinds.http import body_of, call

SLOTS_VERSION = "2024-09-04"
BOOKINGS_VERSION = "2024-08-13"
NO_EVENT_TYPE = "Der Ereignistyp wurde bei Cal.com nicht gefunden."


class CalComProvider(Provider):
    def _url(self, path: str) -> str:
        return f"{settings.CALENDAR_CALCOM_API_BASE.rstrip('/')}{path}"

    def _headers(self, version: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secrets.get('apiKey', '')}", "cal-api-version": version,
                "Accept": "application/json"}

    def _event_type(self) -> int:
        try:
            return int(self.settings.get("eventTypeId", ""))
        except ValueError:
            raise NotFound(NO_EVENT_TYPE) from None

    def check(self) -> None:
        call("GET", self._url(f"/v2/event-types/{self._event_type()}"), headers=self._headers("2024-06-14"),
             not_found=NO_EVENT_TYPE)

    def _length(self) -> timedelta:
        body = body_of(call("GET", self._url(f"/v2/event-types/{self._event_type()}"),
                            headers=self._headers("2024-06-14"), not_found=NO_EVENT_TYPE))
        data = body.get("data") or {}
        minutes = data.get("lengthInMinutes") or data.get("length") or 30
        return timedelta(minutes=int(minutes))

    def busy(self, start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
        body = body_of(call("GET", self._url("/v2/slots"), headers=self._headers(SLOTS_VERSION), params={
            "eventTypeId": self._event_type(), "start": start.astimezone(UTC).isoformat().replace("+00:00", "Z"),
            "end": end.astimezone(UTC).isoformat().replace("+00:00", "Z"), "timeZone": "UTC"},
            not_found=NO_EVENT_TYPE))
        length = self._length()
        free = []
        for day_slots in (body.get("data") or {}).values():
            for slot in day_slots:
                begin = datetime.fromisoformat(str(slot["start"]).replace("Z", "+00:00")).astimezone(UTC)
                free.append((begin, begin + length))
        # busy: what the free spans leave out of [start, end)
        spans, cursor = [], start.astimezone(UTC)
        for begin, finish in sorted(free):
            if begin > cursor:
                spans.append((cursor, begin))
            cursor = max(cursor, finish)
        if cursor < end:
            spans.append((cursor, end.astimezone(UTC)))
        return spans

    def _booked(self, response_body: Any) -> Written:
        data = response_body.get("data") or {}
        uid = data.get("uid") if isinstance(data, dict) else None
        if not uid:
            raise Unavailable("Cal.com hat die Buchung nicht bestätigt.")
        return Written(external_id=str(uid))

    def create(self, draft: EventDraft) -> Written:
        payload = {"start": draft.start.astimezone(UTC).isoformat().replace("+00:00", "Z"),
                   "eventTypeId": self._event_type(),
                   "attendee": {"name": draft.caller_name, "timeZone": draft.time_zone, "language": "de",
                                "phoneNumber": draft.caller_e164},
                   "bookingFieldsResponses": {"notes": draft.description},
                   "metadata": {"stimmwerk": draft.uid}}
        response = call("POST", self._url("/v2/bookings"), headers=self._headers(BOOKINGS_VERSION), json=payload)
        return self._booked(body_of(response))

    def move(self, written: Written, draft: EventDraft) -> Written:
        payload = {"start": draft.start.astimezone(UTC).isoformat().replace("+00:00", "Z"),
                   "reschedulingReason": "Vom Anrufer verschoben (Stimmwerk)"}
        response = call("POST", self._url(f"/v2/bookings/{quote(written.external_id)}/reschedule"),
                        headers=self._headers(BOOKINGS_VERSION), json=payload)
        return self._booked(body_of(response))

    def cancel(self, written: Written) -> None:
        try:
            call("POST", self._url(f"/v2/bookings/{quote(written.external_id)}/cancel"),
                 headers=self._headers(BOOKINGS_VERSION), json={"cancellationReason": "Vom Anrufer abgesagt"})
        except NotFound:
            return


