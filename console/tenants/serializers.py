from rest_framework import serializers


class StrictBooleanField(serializers.BooleanField):
    """Only JSON true/false: "true", 1 or "yes" are mistakes, not booleans."""

    default_error_messages = {"invalid": "Must be a boolean (true or false)."}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class AudioSettingsPatchSerializer(serializers.Serializer):
    recordingEnabled = StrictBooleanField(required=False)
    transcriptionEnabled = StrictBooleanField(required=False)

    def validate(self, attrs):
        unknown = set(self.initial_data) - set(self.fields)
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in sorted(unknown)})
        if not attrs:
            raise serializers.ValidationError(
                {"non_field_errors": ["Send recordingEnabled and/or transcriptionEnabled."]})
        return attrs


def audio_settings_json(tenant):
    return {
        "tenant": tenant.slug,
        "recordingEnabled": tenant.recording_enabled,
        "transcriptionEnabled": tenant.transcription_enabled,
    }
