from rest_framework import serializers

from console.speech.decode import MAX_AUDIO_BYTES

MAX_PHRASES = 500
MAX_VARIABLE_CHARS = 500


class StrictBooleanField(serializers.BooleanField):
    """Only JSON true/false: "true", 1 or "yes" are mistakes, not booleans."""

    default_error_messages = {"invalid": "Must be a boolean (true or false)."}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class PhrasesField(serializers.ListField):
    child = serializers.CharField(max_length=200, trim_whitespace=True)

    def __init__(self, **kwargs):
        super().__init__(required=False, allow_empty=True, max_length=MAX_PHRASES, **kwargs)


class VoiceField(serializers.CharField):
    def __init__(self, **kwargs):
        super().__init__(required=False, max_length=60, **kwargs)


class TranscribeRequestSerializer(serializers.Serializer):
    audio_base64 = serializers.CharField(
        allow_blank=True, trim_whitespace=False,
        help_text=f"Base64 of MP3, WAV, OGG/Opus, WebM or M4A audio, at most {MAX_AUDIO_BYTES} bytes and 10 minutes.")
    filename = serializers.CharField(required=False, allow_blank=True, max_length=255,
                                     help_text="Informational; the format is recognised from the content.")
    language = serializers.JSONField(required=False, help_text="Model language, ^[a-z]{2,3}$; default de.")
    phrases = PhrasesField(help_text="Restrict recognition to these words or phrases.")


class RenderRequestSerializer(serializers.Serializer):
    touchpoint = serializers.CharField(max_length=200)
    variables = serializers.DictField(child=serializers.JSONField(), required=False, default=dict)
    voice = VoiceField()

    def validate_variables(self, variables):
        for name, value in variables.items():
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise serializers.ValidationError(f"'{name}' must be a string or a number.")
            if len(str(value)) > MAX_VARIABLE_CHARS:
                raise serializers.ValidationError(f"'{name}' is longer than {MAX_VARIABLE_CHARS} characters.")
        return variables


class SpeakRequestSerializer(serializers.Serializer):
    text = serializers.CharField(max_length=5000)
    voice = VoiceField()


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
