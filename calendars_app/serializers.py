from typing import Any

from rest_framework import serializers

from calendars_app.kinds.fields import KIND_FIELDS
from calendars_app.models import Calendar
from console.fields import ClosedSerializer


class CalendarSerializer(serializers.ModelSerializer):
    """A calendar as shown: its kind's fields but the secrets (`secretsSet` names those stored)."""

    connection = serializers.SerializerMethodField()
    secretsSet = serializers.SerializerMethodField()
    checkedAt = serializers.DateTimeField(source="checked_at")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    class Meta:
        model = Calendar
        fields = ["id", "name", "kind", "connection", "secretsSet", "checkedAt", "createdAt", "updatedAt"]
        read_only_fields = fields

    def get_connection(self, calendar: Calendar) -> dict[str, str]:
        """The kind's fields that are not secret (url, username; tenantId, clientId, mailbox; eventTypeId)."""
        values = {**calendar.settings, "url": calendar.url}
        return {field.name: str(values.get(field.name, "")) for field in KIND_FIELDS[calendar.kind]
                if not field.secret}

    def get_secretsSet(self, calendar: Calendar) -> list[str]:
        return [field.name for field in KIND_FIELDS[calendar.kind] if field.secret and calendar.secrets_sealed]


def _text(help_text: str) -> Any:
    return serializers.CharField(required=False, allow_blank=True, max_length=2000, help_text=help_text)


class CalendarCreateSerializer(ClosedSerializer):
    """The body of POST /v2/calendars (the kind's fields at the top level)."""

    name = serializers.CharField(max_length=200)
    # The model's choices (one enum in the OpenAPI document); the kinds' fields have one each.
    kind = serializers.ChoiceField(choices=Calendar.Kind.choices)
    url = _text("caldav: the calendar's https address (its collection, e.g. …/calendars/praxis/).")
    username = _text("caldav: the user name.")
    password = _text("caldav: the app password (sealed, never shown back).")
    tenantId = _text("graph: the directory (tenant) id.")
    clientId = _text("graph: the app registration's client id.")
    clientSecret = _text("graph: the client secret (sealed).")
    mailbox = _text("graph: the mailbox whose calendar is booked (e.g. praxis@example.de).")
    apiKey = _text("calcom: the API key (sealed).")
    eventTypeId = _text("calcom: the event type's id.")

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        super().to_internal_value(data)
        return dict(data)


class CalendarUpdateSerializer(CalendarCreateSerializer):
    require_one = True
    name = serializers.CharField(max_length=200, required=False)
    kind = serializers.ChoiceField(choices=Calendar.Kind.choices, required=False)
