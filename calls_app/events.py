"""Parsing and validation of carrier events (CONTRACT §5); no database access.

`parse_event(raw_body)` returns an `Event` whose `data` is normalised and JSON-safe
(numbers in E.164, timestamps as ISO strings), so pending events can be stored and
applied later exactly as if they had just arrived.
"""
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlsplit

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from calls_app.errors import UnknownEventType
from console.errors import ValidationFailed
from console.parsers import json_loads
from console.phone import InvalidPhoneNumber, to_e164

STARTED, TRANSCRIPT, DISCLOSED, ENDED = "call.started", "call.transcript", "call.disclosed", "call.ended"
EVENT_TYPES = (STARTED, TRANSCRIPT, DISCLOSED, ENDED)
END_STATUSES = ("completed", "failed", "busy", "no-answer", "canceled")
TRANSCRIPT_ROLES = ("assistant", "user", "system")
# Longer than any real call; a larger value is a carrier bug, not usage.
MAX_CALL_SECONDS = 24 * 60 * 60
MAX_TRANSCRIPT_TEXT = 20_000
# Event times: far from the ends of Python's calendar (see _datetime).
EARLIEST, LATEST = datetime(1970, 1, 1, tzinfo=UTC), datetime(9999, 1, 1, tzinfo=UTC)
_DATE_AND_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}")
TIME_MESSAGE = ("An ISO 8601 time from 1970 to 9998 is required, e.g. 2025-03-01T09:30:00Z "
                "(a time without offset is UTC).")
# Caller ids that carriers send for withheld numbers; stored as an empty `from`.
WITHHELD_CALLER_IDS = ("", "anonymous", "private", "unknown", "restricted")


@dataclass(frozen=True)
class Event:
    id: str
    type: str
    occurred_at: datetime  # aware
    carrier_call_id: str
    data: dict


def parse_event(raw_body):
    # The project's one JSON reader: malformed_json for what is not JSON or nests too
    # deeply, validation_error for NUL characters and lone surrogates in any string.
    body = json_loads(raw_body)
    if not isinstance(body, dict):
        raise ValidationFailed(details={"non_field_errors": ["The event must be a JSON object."]})
    event_type = body.get("type")
    if event_type not in EVENT_TYPES:
        raise UnknownEventType(f"Unknown event type; known types: {', '.join(EVENT_TYPES)}.",
                               details={"type": [f"'{event_type}' is not an event type."]})
    errors = {}
    event_id = body.get("id")
    if not isinstance(event_id, str) or not event_id.strip() or len(event_id) > 200:
        errors["id"] = ["The event id must be a non-empty string of at most 200 characters."]
    occurred_at = _datetime(body.get("occurredAt"))
    if occurred_at is None:
        errors["occurredAt"] = [TIME_MESSAGE]
    data = body.get("data")
    if not isinstance(data, dict):
        errors["data"] = ["An object is required."]
        data = {}
    normalised = DATA_PARSERS[event_type](data, errors)
    if errors:
        raise ValidationFailed(details=errors)
    return Event(event_id, event_type, occurred_at, normalised["carrierCallId"], normalised)


def _datetime(value):
    """An aware UTC datetime of an ISO 8601 string (no offset: UTC), or None.

    Bounded to EARLIEST…LATEST: a time at the edge of the calendar
    (`9999-12-31T23:59:59-23:59`) cannot be represented in UTC, and one within a day of
    it not in every tenant's time zone (the month of a call is taken there)."""
    if not isinstance(value, str) or len(value) > 64 or not _DATE_AND_TIME.match(value.strip()):
        return None
    try:
        moment = parse_datetime(value.strip())
        if moment is None:
            return None
        moment = moment.replace(tzinfo=UTC) if timezone.is_naive(moment) else moment.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return moment if EARLIEST <= moment < LATEST else None


def _carrier_call_id(data, errors):
    value = data.get("carrierCallId")
    if not isinstance(value, str) or not value.strip() or len(value) > 128:
        errors["data.carrierCallId"] = ["A non-empty string of at most 128 characters is required."]
        return ""
    return value.strip()


def _e164(data, name, errors, *, withheld_allowed=False):
    value = data.get(name)
    if withheld_allowed and (value is None or (isinstance(value, str) and value.strip().lower() in WITHHELD_CALLER_IDS)):
        return ""
    try:
        return to_e164(value)
    except InvalidPhoneNumber as exc:
        errors[f"data.{name}"] = [f"{exc} An E.164 number is required."]
        return ""


def _started(data, errors):
    parsed = {"carrierCallId": _carrier_call_id(data, errors), "direction": data.get("direction")}
    if parsed["direction"] == "inbound":
        parsed["from"] = _e164(data, "from", errors, withheld_allowed=True)
        parsed["to"] = _e164(data, "to", errors)
    elif parsed["direction"] == "outbound":
        call_id = data.get("callId")
        if not isinstance(call_id, str) or not call_id.startswith("cl_"):
            errors["data.callId"] = ["An outbound call.started names the runtime's call id (cl_…)."]
        parsed["callId"] = call_id
    else:
        errors["data.direction"] = ["Either 'inbound' or 'outbound'."]
    return parsed


def _transcript(data, errors):
    parsed = {"carrierCallId": _carrier_call_id(data, errors), "role": data.get("role"), "text": data.get("text")}
    if parsed["role"] not in TRANSCRIPT_ROLES:
        errors["data.role"] = [f"One of {', '.join(TRANSCRIPT_ROLES)}."]
    if not isinstance(parsed["text"], str) or len(parsed["text"]) > MAX_TRANSCRIPT_TEXT:
        errors["data.text"] = [f"A string of at most {MAX_TRANSCRIPT_TEXT} characters is required."]
    ts = _datetime(data.get("ts"))
    if ts is None:
        errors["data.ts"] = [TIME_MESSAGE]
    parsed["ts"] = ts.isoformat() if ts else None
    return parsed


def _disclosed(data, errors):
    return {"carrierCallId": _carrier_call_id(data, errors)}


def _ended(data, errors):
    parsed = {"carrierCallId": _carrier_call_id(data, errors), "status": data.get("status")}
    if parsed["status"] not in END_STATUSES:
        errors["data.status"] = [f"One of {', '.join(END_STATUSES)}."]
    seconds = data.get("seconds")
    # bool is an int in Python; `true` seconds is a carrier bug, not one second.
    if not isinstance(seconds, int) or isinstance(seconds, bool) or not 0 <= seconds <= MAX_CALL_SECONDS:
        errors["data.seconds"] = [f"A whole number of seconds from 0 to {MAX_CALL_SECONDS} is required."]
    parsed["seconds"] = seconds
    recording_url = data.get("recordingUrl")
    if recording_url is not None:
        parts = urlsplit(recording_url) if isinstance(recording_url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc or len(recording_url) > 2000:
            errors["data.recordingUrl"] = ["An http(s) URL of at most 2000 characters, or absent."]
    parsed["recordingUrl"] = recording_url or ""
    return parsed


DATA_PARSERS = {STARTED: _started, TRANSCRIPT: _transcript, DISCLOSED: _disclosed, ENDED: _ended}
