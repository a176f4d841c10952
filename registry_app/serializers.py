"""Query parameters of the registry endpoints and the version resource."""
from rest_framework import serializers

from registry_app.models import CAPABILITIES, HOSTINGS, LATENCY_CLASSES, QUALITY_TIERS, STATUSES, RegistryVersion

LANGUAGE_PATTERN = r"^[a-z]{2,3}$"


class LaneFilterSerializer(serializers.Serializer):
    capability = serializers.ChoiceField(choices=CAPABILITIES, required=False)
    status = serializers.ChoiceField(choices=STATUSES, required=False)
    hosting = serializers.ChoiceField(choices=HOSTINGS, required=False)
    provider = serializers.CharField(required=False, max_length=200)
    language = serializers.RegexField(LANGUAGE_PATTERN, required=False,
                                      error_messages={"invalid": "A language is a 2- or 3-letter lowercase code."})


class RouteQuerySerializer(serializers.Serializer):
    capability = serializers.ChoiceField(choices=CAPABILITIES)
    language = serializers.RegexField(LANGUAGE_PATTERN, required=False,
                                      error_messages={"invalid": "A language is a 2- or 3-letter lowercase code."})
    streaming = serializers.BooleanField(required=False, default=False)
    min_quality = serializers.ChoiceField(choices=QUALITY_TIERS, required=False)
    max_latency = serializers.ChoiceField(choices=LATENCY_CLASSES, required=False)
    allow_paid = serializers.BooleanField(required=False, default=True)


class RegistryVersionSerializer(serializers.ModelSerializer):
    lanes = serializers.IntegerField(source="lane_count")
    loadedAt = serializers.DateTimeField(source="loaded_at")
    loadedBy = serializers.CharField(source="loaded_by")
    current = serializers.SerializerMethodField()

    class Meta:
        model = RegistryVersion
        fields = ["number", "version", "updated", "sha256", "lanes", "loadedAt", "loadedBy", "current"]

    def get_current(self, version) -> bool:
        return version.number == self.context["current_number"]


class RouteCandidateSerializer(serializers.Serializer):
    lane = serializers.CharField()
    rank = serializers.IntegerField()
    reasons = serializers.ListField(child=serializers.CharField())
    model = serializers.DictField(help_text="The lane's entry in the registry document.")


class RouteExclusionSerializer(serializers.Serializer):
    lane = serializers.CharField()
    code = serializers.CharField()
    reason = serializers.CharField()


class RouteSerializer(serializers.Serializer):
    """The body of GET /v2/registry/route (registry_app.routing.Route.as_json), for the schema."""

    capability = serializers.CharField()
    registryVersion = serializers.IntegerField(allow_null=True)
    candidates = RouteCandidateSerializer(many=True)
    excluded = RouteExclusionSerializer(many=True)

    class Meta:
        ref_name = "Route"
