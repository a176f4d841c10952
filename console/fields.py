"""The serializer fields and serializers the API's views share: query parameters
(`PageQuerySerializer`, `LimitField`, `MomentField`, …), bodies (`ClosedSerializer`) and
values shown (`NullIfEmptyField`, `ColumnsField`, which console/listing.py derives)."""
from collections.abc import Sequence
from typing import Any

from rest_framework import serializers

from console.phone import InvalidPhoneNumber, to_e164


class NullIfEmptyField(serializers.CharField):
    """Text stored empty when it was not given, shown as null."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> str | None:  # type: ignore[override]  # null: not given
        return str(value) or None


class ColumnsField(serializers.Field):
    """A value shown from several columns (`columns`, of the row): `to_representation`
    takes their values as a tuple, on DRF's path and a list's alike."""

    def __init__(self, columns: Sequence[str], **kwargs: Any) -> None:
        self.columns = tuple(columns)
        super().__init__(source="*", read_only=True, **kwargs)

    def get_attribute(self, instance: Any) -> tuple[Any, ...]:
        return tuple(getattr(instance, column) for column in self.columns)


class LimitField(serializers.CharField):
    """The `limit` query parameter of list endpoints (CONTRACT §5): a positive whole
    number, 50 when absent, values over 200 count as 200."""

    DEFAULT, MAXIMUM = 50, 200

    def __init__(self, **kwargs):
        # A default is returned as is, not validated: hence the number itself.
        super().__init__(required=False, default=self.DEFAULT, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        digits = value.lstrip("0")
        if not (value.isascii() and value.isdigit()) or not digits:
            raise serializers.ValidationError("Send a positive whole number, e.g. limit=50.")
        # Thousands of digits are still "more than the maximum" (int() refuses over 4,300).
        return self.MAXIMUM if len(digits) > len(str(self.MAXIMUM)) else min(int(digits), self.MAXIMUM)


class ClosedSerializer(serializers.Serializer):
    """A body of the declared fields only: an unknown field is a 400 under its name that
    lists the accepted fields, reported with the other fields' errors (a misspelled
    required field shows as both unknown and missing). `refused` gives fields that
    exist but cannot be sent here their own message. With `require_one`, an empty body
    is a 400 that says which fields to send."""

    require_one = False
    refused: dict[str, str] = {}

    def to_internal_value(self, data):
        problems = {}
        if isinstance(data, dict):
            accepted = f"Unknown field. Accepted: {', '.join(self.fields)}."
            problems = {name: [self.refused.get(name, accepted)] for name in sorted(set(data) - set(self.fields))}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if problems and isinstance(exc.detail, dict):
                raise serializers.ValidationError({**exc.detail, **problems}) from None
            raise
        if problems:
            raise serializers.ValidationError(problems)
        return value

    def validate(self, attrs):
        if self.require_one and not attrs:
            *others, last = self.fields
            raise serializers.ValidationError({"non_field_errors": [f"Send {', '.join(others)} and/or {last}."]})
        return super().validate(attrs)


class ListedChoiceField(serializers.ChoiceField):
    """A choice whose error lists the allowed values, so the fix is in the message."""

    def to_internal_value(self, data):
        if data == "" and self.allow_blank:
            return ""
        if str(data) not in self.choice_strings_to_values:
            allowed = ", ".join(self.choice_strings_to_values)
            raise serializers.ValidationError(f"'{data}' is not a valid choice. Send one of: {allowed}.")
        return self.choice_strings_to_values[str(data)]


class MomentField(serializers.DateTimeField):
    """`since`/`until` of list filters: ISO 8601, e.g. 2026-11-01T00:00:00Z or 2026-11-01."""

    default_error_messages = {
        "invalid": "Send an ISO 8601 time, e.g. 2026-11-01T09:00:00+01:00, 2026-11-01T08:00:00Z or 2026-11-01.",
        "make_aware": "Send an ISO 8601 time with its offset, e.g. 2026-11-01T09:00:00+01:00.",
        "overflow": "Send an ISO 8601 time, e.g. 2026-11-01T09:00:00Z.",
    }

    def to_internal_value(self, value):
        if isinstance(value, str) and len(value) == 10:
            value += "T00:00:00Z"  # a date alone is its start, in UTC
        return super().to_internal_value(value)


class PhoneQueryField(serializers.CharField):
    """A phone number filter in any format a person types (`030 901820`, `+49 30 901820`), as E.164."""

    def to_internal_value(self, data):
        try:
            return to_e164(super().to_internal_value(data))
        except InvalidPhoneNumber as exc:
            raise serializers.ValidationError(str(exc)) from None


class CursorField(serializers.CharField):
    def __init__(self, **kwargs):
        super().__init__(required=False, max_length=500, help_text=(
            "The `next` value of the previous page; omit it for the first page (newest first)."), **kwargs)


class PageQuerySerializer(serializers.Serializer):
    """The page of a cursor-paginated list (`limit`, `cursor`), first among its query
    parameters; the list's serializer adds its filters."""

    limit = LimitField(help_text="1–200 (larger values count as 200), default 50.")
    cursor = CursorField()
