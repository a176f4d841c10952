"""Microsoft 365 calendars through Microsoft Graph: the calendar of one mailbox, an app
registration's client credentials (OAuth 2.0 client credentials grant, scope
`https://graph.microsoft.com/.default`, application permission Calendars.ReadWrite).

Busy times: `GET /users/{mailbox}/calendarView` (recurrences expanded by Graph; free
and cancelled events left out). An event: `POST /users/{mailbox}/events`; a move:
`PATCH …/events/{id}` with `If-Match` and the event's `@odata.etag` (412 on a change
in between); a cancellation: `DELETE …/events/{id}`."""
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

from django.conf import settings

from calendars_app.kinds.base import EventDraft, NotFound, Provider, Unavailable, Written
from calendars_app.kinds.http import body_of, call

NO_MAILBOX = "Das Postfach oder sein Kalender wurde nicht gefunden."


class GraphProvider(Provider):
    def _token(self) -> str:
        url = f"{settings.CALENDAR_GRAPH_LOGIN_BASE.rstrip('/')}/{quote(self.settings.get('tenantId', ''))}" \
              "/oauth2/v2.0/token"
        response = call("POST", url, headers={"Accept": "application/json"}, data={
            "grant_type": "client_credentials", "client_id": self.settings.get("clientId", ""),
            "client_secret": self.secrets.get("clientSecret", ""),
            "scope": "https://graph.microsoft.com/.default"}, not_found="Das Verzeichnis (Tenant) ist unbekannt.")
        token = body_of(response).get("access_token")
        if not isinstance(token, str) or not token:
            raise Unavailable("Der Anmeldedienst hat kein Zugriffstoken geliefert.")
        return token

    def _base(self) -> str:
        return f"{settings.CALENDAR_GRAPH_API_BASE.rstrip('/')}/users/{quote(self.settings.get('mailbox', ''), safe='@')}"

    def _headers(self, **more: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token()}", "Accept": "application/json",
                'Prefer': 'outlook.timezone="UTC"', **more}

    def check(self) -> None:
        call("GET", f"{self._base()}/calendar", headers=self._headers(), not_found=NO_MAILBOX)

    def busy(self, start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
        params: Any = {"startDateTime": start.astimezone(UTC).isoformat(), "endDateTime": end.astimezone(UTC).isoformat(),
                       "$select": "start,end,showAs,isCancelled", "$top": "500"}
        url: str | None = f"{self._base()}/calendarView"
        headers = self._headers()
        spans = []
        pages = 0
        while url and pages < 10:
            body = body_of(call("GET", url, headers=headers, params=params, not_found=NO_MAILBOX))
            for event in body.get("value", []):
                if event.get("isCancelled") or event.get("showAs") == "free":
                    continue
                spans.append((_moment(event["start"]), _moment(event["end"])))
            url, params, pages = body.get("@odata.nextLink"), None, pages + 1
        return sorted(spans)

    def _event(self, draft: EventDraft) -> dict[str, Any]:
        return {"subject": draft.summary, "body": {"contentType": "text", "content": draft.description},
                "start": {"dateTime": draft.start.astimezone(ZoneInfo(draft.time_zone)).replace(tzinfo=None)
                          .isoformat(), "timeZone": draft.time_zone},
                "end": {"dateTime": draft.end.astimezone(ZoneInfo(draft.time_zone)).replace(tzinfo=None).isoformat(),
                        "timeZone": draft.time_zone},
                "showAs": "busy", "transactionId": draft.uid}

    def create(self, draft: EventDraft) -> Written:
        # transactionId: Graph creates one event per id, however often the POST is retried.
        body = body_of(call("POST", f"{self._base()}/events", headers=self._headers(), json=self._event(draft),
                            not_found=NO_MAILBOX))
        return Written(external_id=str(body.get("id", "")), etag=str(body.get("@odata.etag", "")))

    def move(self, written: Written, draft: EventDraft) -> Written:
        event = self._event(draft)
        event.pop("transactionId")
        headers = self._headers(**({"If-Match": written.etag} if written.etag else {}))
        body = body_of(call("PATCH", f"{self._base()}/events/{quote(written.external_id)}", headers=headers,
                            json=event, not_found="Der Termin ist nicht mehr im Kalender."))
        return Written(external_id=written.external_id, etag=str(body.get("@odata.etag", "")))

    def cancel(self, written: Written) -> None:
        headers = self._headers(**({"If-Match": written.etag} if written.etag else {}))
        try:
            call("DELETE", f"{self._base()}/events/{quote(written.external_id)}", headers=headers)
        except NotFound:
            return


def _moment(value: dict[str, str]) -> datetime:
    text = value["dateTime"]
    moment = datetime.fromisoformat(text[:26] if "." in text else text)
    zone = value.get("timeZone") or "UTC"
    return (moment if moment.tzinfo else moment.replace(tzinfo=ZoneInfo("UTC" if zone == "UTC" else zone))).astimezone(UTC)
