from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.fields import ClosedSerializer
from scripts_app.analysis import RULE_IDS
from scripts_app.models import MAX_TEXT_LENGTH
from scripts_app.services import check_script_text
from speech_app.serializers import VoiceField

MAX_VARIABLE_CHARS = 500


@extend_schema_field({"type": "string", "minLength": 1, "maxLength": MAX_TEXT_LENGTH})
class ScriptTextField(serializers.Field):
    """The text exactly as sent (no trimming: finding offsets refer to it); a string
    of 1–5,000 characters that is not only whitespace."""

    def to_internal_value(self, data):
        problem = check_script_text(data)
        if problem:
            raise serializers.ValidationError(problem)
        return data

    def to_representation(self, value):
        return value


class ScriptPutSerializer(ClosedSerializer):
    text = ScriptTextField()


class FindingSerializer(serializers.Serializer):
    rule = serializers.ChoiceField(choices=RULE_IDS)
    level = serializers.ChoiceField(choices=["error", "warning"])
    message = serializers.CharField(help_text="German; says what to do.")
    line = serializers.IntegerField(help_text="1-based")
    column = serializers.IntegerField(help_text="1-based")
    offset = serializers.IntegerField(help_text="characters from the start of the text")
    length = serializers.IntegerField(help_text="text[offset:offset+length] == excerpt")
    excerpt = serializers.CharField()
    suggestion = serializers.CharField(allow_null=True, help_text="replacement text, or null")


class AnalysisSerializer(serializers.Serializer):
    words = serializers.IntegerField()
    durationSec = serializers.FloatField(help_text="words / 110 × 60, one decimal")
    variables = serializers.ListField(child=serializers.CharField())
    findings = FindingSerializer(many=True)
    spoken = serializers.CharField(
        allow_blank=True, help_text="the text as the voice will say it: numbers, times, dates, prices and "
                                    "abbreviations in German words; variables and links as written")


class ListAnalysisSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="touchpoint id")
    durationSec = serializers.FloatField()
    findings = FindingSerializer(many=True)


class ScriptSerializer(serializers.Serializer):
    """An effective script (`selectors.EffectiveScript`)."""

    touchpoint_id = serializers.CharField()
    text = serializers.CharField()
    # The stubs take a declared field for the attribute Field.source; DRF's metaclass pops it.
    source = serializers.ChoiceField(choices=["default", "tenant"])  # type: ignore[assignment]
    maxSeconds = serializers.IntegerField(source="max_seconds")
    opensCall = serializers.BooleanField(source="opens_call")


def script_data(script):
    """`ScriptSerializer(script).data`, built directly (CharField and ChoiceField give the
    string, IntegerField int(), BooleanField bool()); tests/scripts_app/test_script_data.py
    checks both agree byte for byte."""
    return {"touchpoint_id": str(script.touchpoint_id), "text": str(script.text), "source": str(script.source),
            "maxSeconds": int(script.max_seconds), "opensCall": bool(script.opens_call)}


class ScriptWithAnalysisSerializer(ScriptSerializer):
    analysis = AnalysisSerializer(source="*", read_only=True)


class ScriptListSerializer(serializers.Serializer):
    scripts = ScriptSerializer(many=True)
    analysis = ListAnalysisSerializer(many=True, required=False, help_text="only with analyze=1")


class RenderRequestSerializer(ClosedSerializer):
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
