"""Response types of the open service endpoints, for the OpenAPI document only: the
views build these bodies directly; the serializers name their fields and types so a
generated client can parse them (console/openapi.py)."""
from rest_framework import serializers


class LaneErrorSerializer(serializers.Serializer):
    outcome = serializers.CharField(help_text="`rejected` (4xx: a wrong key), `server_error`, `timeout`, …")
    detail = serializers.CharField(help_text="What the provider answered, e.g. `… HTTP 401`.")
    at = serializers.DateTimeField()

    class Meta:
        ref_name = "LaneError"


class EngineStatusSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.CharField(help_text="`tts` or `stt`.")
    name = serializers.CharField()
    engine = serializers.CharField()
    mode = serializers.CharField()
    languages = serializers.ListField(child=serializers.CharField())
    usableNow = serializers.BooleanField()
    reason = serializers.CharField(required=False, help_text="Why the engine is not usable now.")
    # A field named like Field.source, which the stubs type as the attribute.
    source = serializers.CharField(  # type: ignore[assignment]
        required=False, help_text="`process` or `registry` (/v2/meta/engines).")
    status = serializers.CharField(required=False, help_text="Registry lanes: the lane's status.")
    servedBy = serializers.CharField(required=False, allow_null=True,
                                     help_text="Registry lanes: the engine of this process serving it, or null.")
    lastError = LaneErrorSerializer(required=False, allow_null=True,
                                    help_text="Registry lanes: the last failed call (a wrong key: the provider's "
                                              "401), or null.")

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


class SipCarrierStateSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The carrier's id.")
    state = serializers.ChoiceField(["registered", "registering", "failing", "static"])
    reason = serializers.CharField(help_text="The trunk's last answer when failing, e.g. `403 Forbidden`.")

    class Meta:
        ref_name = "SipCarrierState"


class HealthSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    service = serializers.CharField()
    contract = serializers.CharField()
    usableVoiceProfile = serializers.CharField(help_text="`<engine>/<language>` a call is spoken with now, or `none`.")
    tenants = serializers.IntegerField()
    sipCarriers = SipCarrierStateSerializer(many=True, required=False, help_text=(
        "Each SIP trunk's registration as the SIP agent last reported it (docs/telephony.md)."))

    class Meta:
        ref_name = "Health"


class ModuleHealthSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    engines = EngineStatusSerializer(many=True)

    class Meta:
        ref_name = "ModuleHealth"
