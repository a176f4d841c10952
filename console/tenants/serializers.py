from rest_framework import serializers

from console.fields import ClosedSerializer


class StrictBooleanField(serializers.BooleanField):
    """Only JSON true/false: "true", 1 or "yes" are mistakes, not booleans."""

    default_error_messages = {"invalid": "Must be a boolean (true or false)."}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class AudioSettingsPatchSerializer(ClosedSerializer):
    require_one = True
    recordingEnabled = StrictBooleanField(required=False)
    transcriptionEnabled = StrictBooleanField(required=False)


class AudioSettingsSerializer(serializers.Serializer):
    """The body of GET/PATCH /v2/audio/settings (CONTRACT §4), for the schema."""

    tenant = serializers.CharField()
    recordingEnabled = serializers.BooleanField()
    transcriptionEnabled = serializers.BooleanField()


def audio_settings_json(tenant):
    return {
        "tenant": tenant.slug,
        "recordingEnabled": tenant.recording_enabled,
        "transcriptionEnabled": tenant.transcription_enabled,
    }
