from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.fields import ClosedSerializer
from tools_app.models import HttpTool
from tools_app.services import DEFAULT_TIMEOUT_MS, MAX_DESCRIPTION, TIMEOUT_MS_RANGE


class HttpToolSerializer(serializers.ModelSerializer):
    parameters = serializers.DictField(help_text="A JSON Schema (Draft 2020-12) with \"type\": \"object\".")
    timeoutMs = serializers.IntegerField(source="timeout_ms")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    class Meta:
        model = HttpTool
        fields = ["id", "name", "description", "parameters", "url", "timeoutMs", "createdAt", "updatedAt"]
        read_only_fields = fields


class HttpToolWithSecretSerializer(HttpToolSerializer):
    """The answer of a create or a rotation: the only time the secret is shown."""

    secret = serializers.SerializerMethodField(help_text="whsec_…: verifies the calls' signatures. Shown once.")

    class Meta(HttpToolSerializer.Meta):
        fields = [*HttpToolSerializer.Meta.fields, "secret"]
        read_only_fields = fields

    def get_secret(self, tool) -> str:
        return self.context["secret"]


def documented(field):
    """A request field that takes any JSON value (tools_app.services.http_tool_values
    checks it, for the API and the admin alike), described as `field`."""
    return extend_schema_field(field)(type("DocumentedJSONField", (serializers.JSONField,), {}))(required=False)


class HttpToolCreateSerializer(ClosedSerializer):
    name = serializers.CharField(max_length=64, help_text="^[a-z][a-z0-9_]{0,63}$, unique in the tenant, not the "
                                                          "name of a built-in tool.")
    description = documented(serializers.CharField(max_length=MAX_DESCRIPTION, allow_blank=True))
    parameters = documented(serializers.DictField(help_text="A JSON Schema with \"type\": \"object\"; default "
                                                            "{\"type\": \"object\", \"properties\": {}}."))
    url = serializers.CharField(max_length=2000, help_text="The fixed https URL the calls are POSTed to.")
    timeoutMs = documented(serializers.IntegerField(min_value=TIMEOUT_MS_RANGE[0], max_value=TIMEOUT_MS_RANGE[1],
                                                    help_text=f"Default {DEFAULT_TIMEOUT_MS}."))

    def to_internal_value(self, data):
        super().to_internal_value(data)
        return dict(data)


class HttpToolUpdateSerializer(HttpToolCreateSerializer):
    require_one = True
    name = documented(serializers.CharField(max_length=64))
    url = documented(serializers.CharField(max_length=2000))


class HttpToolRotateSerializer(ClosedSerializer):
    """`keepPrevious`: the old secret still signs for the overlap (default); false ends
    it at once (a leaked secret)."""

    keepPrevious = serializers.BooleanField(required=False, default=True)
