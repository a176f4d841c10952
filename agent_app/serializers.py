from typing import Any

from rest_framework import serializers

from agent_app.audio import FORMATS
from console.fields import ClosedSerializer
from speech_app.stt import LANGUAGE_PATTERN


class AudioFormatSerializer(serializers.Serializer):
    """Nested, so unknown fields are checked here (ClosedSerializer reads the top-level body)."""

    encoding = serializers.ChoiceField(choices=["pcm_s16le", "mulaw"], default="pcm_s16le")
    sampleRate = serializers.IntegerField(required=False)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict) and set(data) - set(self.fields):
            raise serializers.ValidationError({name: ["Unknown field."] for name in sorted(set(data) - set(self.fields))})
        return super().to_internal_value(data)

    def validate(self, attrs: Any) -> Any:
        rate = attrs.setdefault("sampleRate", 16000 if attrs["encoding"] == "pcm_s16le" else 8000)
        if (attrs["encoding"], rate) not in FORMATS:
            raise serializers.ValidationError({"sampleRate": ["pcm_s16le is 16000 Hz, mulaw 8000 Hz."]})
        return attrs


class SessionRequestSerializer(ClosedSerializer):
    assistant = serializers.CharField(required=False, max_length=64)
    language = serializers.RegexField(LANGUAGE_PATTERN, required=False)
    variables = serializers.DictField(child=serializers.CharField(max_length=500, allow_blank=True),
                                      required=False, default=dict)
    audio = AudioFormatSerializer(required=False)

    def validate_variables(self, value: dict[str, str]) -> dict[str, str]:
        if len(value) > 50 or any(len(name) > 64 for name in value):
            raise serializers.ValidationError("At most 50 variables, names of at most 64 characters.")
        return value


class SessionSerializer(serializers.Serializer):
    sessionId = serializers.CharField(source="session.id")
    token = serializers.CharField()
    url = serializers.CharField()
    expiresAt = serializers.DateTimeField(source="session.expires_at")
    callId = serializers.CharField(source="session.call_id")
    maxSeconds = serializers.IntegerField(source="session.call.max_seconds")
    audio = serializers.SerializerMethodField()

    def get_audio(self, grant: dict[str, Any]) -> dict[str, Any]:
        session = grant["session"]
        return {"encoding": session.encoding, "sampleRate": session.sample_rate, "channels": 1}
