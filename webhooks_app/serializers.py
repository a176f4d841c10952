from rest_framework import serializers

from console.fields import ClosedSerializer, CursorField, LimitField
from webhooks_app.models import EVENT_TYPES, Attempt, Delivery, Endpoint


class EndpointSerializer(serializers.ModelSerializer):
    class Meta:
        model = Endpoint
        fields = ["id", "url", "description", "event_types", "active", "created_at", "updated_at"]
        read_only_fields = fields


class EndpointWithSecretSerializer(EndpointSerializer):
    """The answer of a create or a rotation: the only time the secret is shown."""

    secret = serializers.SerializerMethodField()

    class Meta(EndpointSerializer.Meta):
        fields = [*EndpointSerializer.Meta.fields, "secret"]
        read_only_fields = fields

    def get_secret(self, endpoint) -> str:
        return self.context["secret"]


class EventTypesField(serializers.ListField):
    child = serializers.ChoiceField(choices=EVENT_TYPES)

    def __init__(self, **kwargs):
        super().__init__(min_length=1, max_length=len(EVENT_TYPES), **kwargs)


class EndpointCreateSerializer(ClosedSerializer):
    url = serializers.URLField(max_length=2000)
    event_types = EventTypesField()
    description = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class EndpointUpdateSerializer(ClosedSerializer):
    require_one = True
    url = serializers.URLField(max_length=2000, required=False)
    event_types = EventTypesField(required=False)
    description = serializers.CharField(max_length=200, required=False, allow_blank=True)
    active = serializers.BooleanField(required=False)


class EndpointRotateSerializer(ClosedSerializer):
    """`keep_previous`: the old secret still signs for the overlap (default); false
    ends it at once (a leaked secret)."""

    keep_previous = serializers.BooleanField(required=False, default=True)


class AttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = Attempt
        fields = ["number", "outcome", "started_at", "duration_ms", "response_status", "error"]
        read_only_fields = fields


class DeliverySerializer(serializers.ModelSerializer):
    attempt_list = AttemptSerializer(source="attempt_set", many=True, read_only=True)

    class Meta:
        model = Delivery
        fields = ["id", "event_type", "state", "attempts", "next_attempt_at", "created_at", "finished_at",
                  "attempt_list"]
        read_only_fields = fields


class DeliveryListQuerySerializer(ClosedSerializer):
    """`GET /v2/webhooks/{id}/deliveries`: a page (`limit`, default 50, over 200 is 200;
    `cursor`) and the state filter."""

    state = serializers.ChoiceField(choices=Delivery.State.choices, required=False)
    limit = LimitField(help_text="1–200 (larger values count as 200), default 50.")
    cursor = CursorField()
