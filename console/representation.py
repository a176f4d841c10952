"""Values as the API's DRF serializers write them, for rows read without model
instances (console/compiled.py, console/listing.py). Each function returns exactly
what the named DRF field returns; tests compare whole lists against the serializers
byte for byte."""
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


def utc_datetime_text(value):
    """`datetime_text(value)` in the UTC zone of a timestamp that is in UTC already
    (aware with offset 0, or naive as SQLite's columns come back when the connection's
    zone is UTC), written without moving it between zones; None for any other value."""
    if value.tzinfo is None:
        return value.isoformat() + "Z"
    if value.utcoffset() == _NO_OFFSET:
        return value.isoformat()[:-6] + "Z"
    return None


_NO_OFFSET = dt.timedelta(0)



class ReadyJSON:
    """A value already written as JSON text (str or UTF-8 bytes), byte for byte as DRF's
    compact renderer would write it (calls_app/call_list.py), put into a response's data
    as it is. Only console.rendering.FastJSONRenderer takes it (spliced in; parsed again
    for an indented rendering)."""
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return f"ReadyJSON({self.text!r})"
