"""Response types of the open service endpoints, for the OpenAPI document only: the
views build these bodies directly; the serializers name their fields and types so a
generated client can parse them (console/openapi.py)."""
from rest_framework import serializers


class EngineStatusSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.CharField(help_text="`tts` or `stt`.")
    name = serializers.CharField()
    engine = serializers.CharField()
    mode = serializers.CharField()
    languages = serializers.ListField(child=serializers.CharField())
    usableNow = serializers.BooleanField()
    reason = serializers.CharField(required=False, help_text="Why the engine is not usable now.")
    source = serializers.CharField(required=False, help_text="`process` or `registry` (/v2/meta/engines).")
    status = serializers.CharField(required=False, help_text="Registry lanes: the lane's status.")
    servedBy = serializers.CharField(required=False, allow_null=True,
                                     help_text="Registry lanes: the engine of this process serving it, or null.")

    class Meta:
        ref_name = "EngineStatus"


class CarrierStatusSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    usableNow = serializers.BooleanField()

    class Meta:
        ref_name = "CarrierStatus"


class EnginesSerializer(serializers.Serializer):
    engines = EngineStatusSerializer(many=True)
    carriers = CarrierStatusSerializer(many=True)

    class Meta:
        ref_name = "Engines"


class HealthEngineSerializer(serializers.Serializer):
    engine = serializers.CharField()
    mode = serializers.CharField()
    usableNow = serializers.BooleanField()
    languages = serializers.ListField(child=serializers.CharField(), required=False)
    reason = serializers.CharField(required=False)


class HealthSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    service = serializers.CharField()
    contract = serializers.CharField()
    usableVoiceProfile = serializers.CharField(help_text="`<engine>/<language>` a call is spoken with now, or `none`.")
    tenants = serializers.IntegerField()

    class Meta:
        ref_name = "Health"


class ModuleHealthSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    engines = EngineStatusSerializer(many=True)

    class Meta:
        ref_name = "ModuleHealth"


class WordSerializer(serializers.Serializer):
    word = serializers.CharField()
    start = serializers.FloatField()
    end = serializers.FloatField()
    conf = serializers.FloatField()


class SegmentSerializer(serializers.Serializer):
    start = serializers.FloatField()
    end = serializers.FloatField()
    text = serializers.CharField()


# The entities of a transcript (speech_app/entities.py).
ENTITY_TYPES = ("phone", "date", "time", "datetime", "amount", "reference")
REFERENCE_KINDS = ("customer", "order", "invoice", "contract", "case", "number")


class EntitySerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=ENTITY_TYPES)
    text = serializers.CharField(help_text="the words of the transcript it was read from")
    value = serializers.CharField(
        help_text="phone: E.164; date: YYYY-MM-DD; time: HH:MM; datetime: ISO 8601 with the tenant's offset; "
                  "amount: decimal with two places; reference: its digits (and a letter prefix)")
    currency = serializers.CharField(required=False, help_text="amount only: ISO 4217 code")
    kind = serializers.ChoiceField(choices=REFERENCE_KINDS, required=False,
                                   help_text="reference only: what the number names")

    class Meta:
        ref_name = "Entity"


class TranscriptSerializer(serializers.Serializer):
    text = serializers.CharField(allow_blank=True)
    words = WordSerializer(many=True)
    segments = SegmentSerializer(many=True)
    durationSec = serializers.FloatField()
    engine = serializers.CharField()
    model = serializers.CharField()
    language = serializers.CharField()
    entities = EntitySerializer(many=True, help_text="numbers heard in a German transcript: phone numbers, "
                                                     "dates, times, amounts, reference numbers (empty otherwise)")

    class Meta:
        ref_name = "Transcript"
