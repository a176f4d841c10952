"""Bodies and query parameters of the gateway paths."""
import datetime

from django.utils import timezone
from rest_framework import serializers

from console.api import ClosedSerializer
from gateway_app.models import LaneUsage

LANGUAGE_PATTERN = r"^[a-z]{2,3}$"
LANGUAGE_ERROR = {"invalid": "A language is a 2- or 3-letter lowercase code such as 'de'."}
MAX_PROMPT_CHARS = 20_000
MAX_SYSTEM_CHARS = 4_000
# A ceiling on any one request's budget, whatever a client sends.
MAX_EUR_CEILING = 100


class StrictCharField(serializers.CharField):
    """A JSON string, never a number or boolean turned into one."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError("Must be a string.")
        return super().to_internal_value(data)


class BudgetField(serializers.FloatField):
    """Euros a request may cost: a JSON number from 0 to 100."""

    def __init__(self, **kwargs):
        super().__init__(required=False, min_value=0, max_value=MAX_EUR_CEILING, **kwargs)

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise serializers.ValidationError("Must be a number of euros, e.g. 0.01.")
        return super().to_internal_value(data)


class AgentRequestSerializer(ClosedSerializer):
    prompt = StrictCharField(max_length=MAX_PROMPT_CHARS, trim_whitespace=False)
    capability = serializers.ChoiceField(choices=["chat", "code"], required=False, default="chat")
    language = serializers.RegexField(LANGUAGE_PATTERN, required=False, error_messages=LANGUAGE_ERROR)
    max_eur = BudgetField()
    system = StrictCharField(max_length=MAX_SYSTEM_CHARS, required=False, allow_blank=True, trim_whitespace=False)

    def validate_prompt(self, value):
        if not value.strip():
            raise serializers.ValidationError("The prompt is empty.")
        return value


class RoleRequestSerializer(ClosedSerializer):
    role = serializers.CharField(help_text="trainee, junior, senior or experte (checked first, by the view).")
    prompt = StrictCharField(max_length=MAX_PROMPT_CHARS, trim_whitespace=False)
    language = serializers.RegexField(LANGUAGE_PATTERN, required=False, error_messages=LANGUAGE_ERROR)
    validate_prompt = AgentRequestSerializer.validate_prompt


class GatewaySpeakSerializer(ClosedSerializer):
    text = StrictCharField(max_length=5000)
    voice = StrictCharField(max_length=60, required=False)
    language = serializers.RegexField(LANGUAGE_PATTERN, required=False, error_messages=LANGUAGE_ERROR)
    max_eur = BudgetField()


class GatewayTranscribeQuerySerializer(serializers.Serializer):
    phrase = serializers.CharField(required=False, help_text="Repeat to restrict recognition to these phrases "
                                   "(local engines only).")
    language = serializers.RegexField(LANGUAGE_PATTERN, required=False, error_messages=LANGUAGE_ERROR)
    max_eur = serializers.FloatField(required=False, min_value=0, max_value=MAX_EUR_CEILING)

    def validate(self, data):
        data.pop("phrase", None)  # repeated: the view reads every one of them
        return data


class UsageQuerySerializer(serializers.Serializer):
    """`from` and `to` (UTC days, inclusive; default the 30 days up to today), `lane`."""

    DEFAULT_DAYS, MAX_DAYS = 30, 366

    def get_fields(self):  # `from` is a Python keyword, so the fields are named here
        day = {"required": False, "input_formats": ["%Y-%m-%d"]}
        return {"from": serializers.DateField(**day), "to": serializers.DateField(**day),
                "lane": serializers.CharField(required=False, max_length=100)}

    def validate(self, data):
        last = data.get("to") or timezone.now().date()
        first = data.get("from") or last - datetime.timedelta(days=self.DEFAULT_DAYS - 1)
        if first > last:
            raise serializers.ValidationError({"from": ["Must not be after 'to'."]})
        if (last - first).days >= self.MAX_DAYS:
            raise serializers.ValidationError({"from": [f"At most {self.MAX_DAYS} days at once."]})
        return {"first_day": first, "last_day": last, "lane_id": data.get("lane")}


class LaneUsageSerializer(serializers.ModelSerializer):
    lane = serializers.CharField(source="lane_id")
    inputTokens = serializers.IntegerField(source="input_tokens")
    outputTokens = serializers.IntegerField(source="output_tokens")
    audioSeconds = serializers.FloatField(source="audio_seconds")
    eur = serializers.FloatField()

    class Meta:
        model = LaneUsage
        fields = ["day", "lane", "capability", "mode", "requests", "failures", "inputTokens", "outputTokens",
                  "characters", "audioSeconds", "eur"]
