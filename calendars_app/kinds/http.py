"""The bounded JSON requests of the Graph and Cal.com kinds (requests; the host checked
by console.outbound before each request)."""
from typing import Any

import requests

from calendars_app.kinds.base import Conflict, NotFound, Unauthorized, Unavailable, host_check, timeout

UNREACHABLE = "Der Kalenderdienst antwortet nicht (nicht erreichbar oder zu langsam)."


def call(method: str, url: str, *, headers: dict[str, str], json: Any = None, data: Any = None,
         params: Any = None, not_found: str = "Nicht gefunden.") -> requests.Response:
    host_check(url)
    try:
        response = requests.request(method, url, headers=headers, json=json, data=data, params=params,
                                    timeout=timeout(), allow_redirects=False)
    except requests.RequestException as exc:
        raise Unavailable(UNREACHABLE) from exc
    status = response.status_code
    if status in (401, 403):
        raise Unauthorized("Der Kalenderdienst lehnt die Anmeldung ab: die Zugangsdaten sind falsch.")
    if status == 404:
        raise NotFound(not_found)
    if status in (409, 412):
        raise Conflict("Der Termin ist nicht mehr frei oder wurde geändert.")
    if status >= 400:
        raise Unavailable(f"Der Kalenderdienst hat einen Fehler gemeldet (HTTP {status}).")
    return response


def body_of(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise Unavailable("Der Kalenderdienst hat unlesbar geantwortet.") from exc
