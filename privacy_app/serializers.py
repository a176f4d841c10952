from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.fields import ClosedSerializer, LimitField
from console.ids import ID_LENGTH
from console.numbers.serializers import E164Field
from privacy_app.models import MAX_RETENTION_DAYS

# Names on the wire (camelCase: a new resource) and on the model.
SETTINGS_FIELDS = {"transcriptDays": "transcript_days", "recordingDays": "recording_days", "leadDays": "lead_days",
                   "deliveryDays": "delivery_days"}


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_RETENTION_DAYS, "nullable": True})
class RetentionDaysField(serializers.Field):
    """A whole number of days (1–36,500), or null for "without limit"; never a string,
    a fraction or a boolean."""

    default_error_messages = {
        "invalid": f"Send a whole number of days from 1 to {MAX_RETENTION_DAYS}, or null for no limit.",
    }

    def __init__(self, **kwargs):
        super().__init__(required=False, allow_null=True, **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, int) or isinstance(data, bool) or not 1 <= data <= MAX_RETENTION_DAYS:
            self.fail("invalid")
        return data

    def to_representation(self, value):
        return value


class RetentionSettingsPatchSerializer(ClosedSerializer):
    require_one = True
    transcriptDays = RetentionDaysField()
    recordingDays = RetentionDaysField()
    leadDays = RetentionDaysField()
    deliveryDays = RetentionDaysField()


def retention_settings_json(retention):
    return {"tenant": retention.tenant.slug,
            **{wire: getattr(retention, name) for wire, name in SETTINGS_FIELDS.items()}}


class SubjectRequestSerializer(ClosedSerializer):
    """`{"phone"}` in any format `console.phone.to_e164` reads (`0171 2345678`,
    `+49 171 2345678`, `0049…`), or `{"callId"}`: one call (a web call of the voice
    agent has no number). Exactly one of them."""

    phone = E164Field(max_length=40, required=False)
    callId = serializers.CharField(max_length=ID_LENGTH, required=False)

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError({"phone": ["Send the phone number, or callId for one call."]})
        if len(attrs) > 1:
            raise serializers.ValidationError({"callId": ["Send either phone or callId, not both."]})
        return super().validate(attrs)


class PrivacyListQuerySerializer(serializers.Serializer):
    limit = LimitField()


def _iso(moment):
    return serializers.DateTimeField().to_representation(moment) if moment else None


def export_json(export, *, with_document=True):
    data = {
        "id": export.id, "status": export.status, "phone": export.phone or None, "callId": export.call_id or None,
        "createdAt": _iso(export.created_at),
        "readyAt": _iso(export.ready_at), "expiresAt": _iso(export.expires_at),
    }
    if with_document:
        data["document"] = export.document
    return data


def erasure_json(erasure):
    return {"id": erasure.id, "erasedAt": _iso(erasure.erased_at), "counts": erasure.counts}


class ExportSerializer(serializers.Serializer):
    """The body of an export (`export_json`), for the schema."""

    id = serializers.CharField()
    status = serializers.CharField()
    phone = serializers.CharField(allow_null=True, help_text="The number exported (E.164), or null.")
    callId = serializers.CharField(allow_null=True, help_text="The call exported, or null.")
    createdAt = serializers.DateTimeField()
    readyAt = serializers.DateTimeField(allow_null=True)
    expiresAt = serializers.DateTimeField(allow_null=True)
    document = serializers.DictField(required=False, allow_null=True,
                                     help_text="The export's JSON document (single export, while not expired).")

    class Meta:
        ref_name = "Export"


class ErasureSerializer(serializers.Serializer):
    """The body of an erasure receipt (`erasure_json`), for the schema."""

    id = serializers.CharField()
    erasedAt = serializers.DateTimeField()
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="What was erased, by kind.")

    class Meta:
        ref_name = "Erasure"


class RetentionSettingsSerializer(serializers.Serializer):
    tenant = serializers.CharField()
    transcriptDays = serializers.IntegerField(allow_null=True)
    recordingDays = serializers.IntegerField(allow_null=True)
    leadDays = serializers.IntegerField(allow_null=True)
    deliveryDays = serializers.IntegerField(allow_null=True)

    class Meta:
        ref_name = "RetentionSettings"
