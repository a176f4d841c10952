from rest_framework import serializers

from console.fields import ClosedSerializer
from console.numbers.models import PhoneNumber
from console.phone import InvalidPhoneNumber, to_e164


class PhoneNumberSerializer(serializers.ModelSerializer):
    assistant = serializers.CharField(source="assistant_id", allow_null=True)
    assistantVersion = serializers.IntegerField(source="assistant_version", allow_null=True,
                                                help_text="The published version pinned; null: the latest.")

    class Meta:
        model = PhoneNumber
        fields = ["id", "e164", "label", "assistant", "assistantVersion"]
        read_only_fields = fields


class E164Field(serializers.CharField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError("Send the number as a string, e.g. \"+49 30 1234567\".")
        try:
            return to_e164(super().to_internal_value(data))
        except InvalidPhoneNumber as exc:
            raise serializers.ValidationError(str(exc)) from None


class PhoneNumberCreateSerializer(ClosedSerializer):
    e164 = E164Field(max_length=40)
    # A field named like Field.label, which the stubs type as that attribute.
    label = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")  # type: ignore[assignment]
    assistant = serializers.CharField(max_length=40, required=False, allow_null=True, default=None)
    assistantVersion = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1,
                                                help_text="Pin a published version of the assistant; "
                                                          "null: its latest.")


class PhoneNumberUpdateSerializer(ClosedSerializer):
    label = serializers.CharField(max_length=100, required=False, allow_blank=True)  # type: ignore[assignment]
    assistant = serializers.CharField(max_length=40, required=False, allow_null=True)
    assistantVersion = serializers.IntegerField(required=False, allow_null=True, min_value=1,
                                                help_text="Pin a published version of the assistant; "
                                                          "null: its latest. A new assistant clears the pin.")
    # The number itself is the routing key of inbound calls; it is replaced by
    # deleting and adding a number, never edited in place.
    refused = {"e164": "The number cannot be changed; delete it and add the new one."}

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError({"non_field_errors": ["Send 'label', 'assistant' and/or 'assistantVersion'."]})
        return attrs
