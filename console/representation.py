"""Values as the API's DRF serializers write them, for lists built from plain rows
without a serializer's per-field work (which costs more than the query itself once
a list has a few dozen rows). Each function returns exactly what the named DRF field
returns; tests compare whole lists against the serializers byte for byte."""
import datetime as dt

from django.utils import timezone


def datetime_text(value, zone=None):
    """DRF's DateTimeField (ISO 8601): in the current time zone, UTC written as Z; None
    for no value; a string is taken as already written (as DRF does)."""
    if not value:
        return None
    if isinstance(value, str):
        return value
    text = value.astimezone(zone or timezone.get_current_timezone()).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def is_utc(zone):
    return zone is dt.timezone.utc or getattr(zone, "key", None) in ("UTC", "Etc/UTC")


def sqlite_utc_text(stored):
    """`datetime_text` of a timestamp as Django stores it in SQLite (naive UTC,
    `str(datetime)`: "2025-03-01 10:00:00[.123456]") for the UTC zone, by rewriting the
    text instead of parsing and formatting it; None for any other form of text."""
    if len(stored) in (19, 26) and stored[10] == " " and stored[19:] != ".000000":
        return f"{stored[:10]}T{stored[11:]}Z"
    return None
