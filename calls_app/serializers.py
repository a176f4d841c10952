import json
import re

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from calls_app.analysis import analysis_data
from calls_app.models import Call
from calls_app.recordings import recording_link
from console.fields import (
    ClosedSerializer,
    ColumnsField,
    ListedChoiceField,
    MomentField,
    NullIfEmptyField,
    PageQuerySerializer,
    PhoneQueryField,
)
from console.phone import InvalidPhoneNumber, to_e164
from console.representation import ReadyJSON

E164 = re.compile(r"^\+[1-9][0-9]{6,14}$")


class TranscriptEntrySerializer(serializers.Serializer):
    role = serializers.CharField()
    text = serializers.CharField()
    ts = serializers.DateTimeField()


@extend_schema_field({"type": "string", "nullable": True})
class RecordingLinkField(ColumnsField):
    """A carrier's link as it is, a recording of ours as a signed link (calls_app.recordings)."""

    def to_representation(self, value):
        return recording_link(*value)


class CallSerializer(serializers.Serializer):
    id = serializers.CharField()
    direction = serializers.CharField()
    from_e164 = serializers.CharField()
    to_e164 = serializers.CharField()
    status = serializers.CharField()
    carrier = serializers.CharField(source="carrier_id")
    disclosed = serializers.IntegerField(read_only=True)  # 1 or 0
    seconds = serializers.IntegerField()
    max_seconds = serializers.IntegerField(allow_null=True)
    recording_enabled = serializers.BooleanField()
    recording_announced = serializers.BooleanField()
    is_test = serializers.BooleanField()
    transcription_enabled = serializers.BooleanField()
    recording_url = RecordingLinkField(["id", "recording_url"])
    lead_id = NullIfEmptyField(read_only=True)
    assistant_version = serializers.IntegerField(allow_null=True, help_text=(
        "The published version of its assistant the call ran with; null: the draft (never published) or none."))
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    ended_at = serializers.DateTimeField(allow_null=True)
    transcript = TranscriptEntrySerializer(source="transcript_entries", many=True)
    redacted = serializers.BooleanField()


class StageMediansSerializer(serializers.Serializer):
    end_of_turn = serializers.IntegerField(help_text="Waiting for the end of the caller's turn.")
    recognition = serializers.IntegerField(help_text="Recognition still under way once the end was decided.")
    thinking = serializers.IntegerField(help_text="The answer's text.")
    synthesis = serializers.IntegerField(help_text="Synthesis and sending of the answer's first audio.")


class CallLatencySerializer(serializers.Serializer):
    turns = serializers.IntegerField(help_text="Replies measured.")
    p50_ms = serializers.IntegerField(help_text="Median milliseconds from the end of the caller's speech to the "
                                                "first audio of the reply (nearest rank).")
    p90_ms = serializers.IntegerField(help_text="90th percentile of the same (nearest rank).")
    max_ms = serializers.IntegerField()
    median_ms = StageMediansSerializer(help_text="The median of each stage, in milliseconds.")


class CallAnalysisSerializer(serializers.Serializer):
    """A call's analysis (calls_app.analysis.analysis_data), written after it ended."""

    summary = serializers.CharField(help_text="German; \"\" when the assistant asks for no summary.")
    structured = serializers.JSONField(allow_null=True, help_text="What the assistant's analysis schema asks for; "
                                                                  "null without a schema.")
    structured_valid = serializers.BooleanField(allow_null=True, help_text="Whether `structured` fits the schema "
                                                                           "(null without a schema).")
    structured_errors = serializers.ListField(child=serializers.CharField(), help_text="Why it does not fit.")
    success = serializers.BooleanField(allow_null=True, help_text="Whether the call met the success criteria "
                                                                  "(null without criteria).")
    outcome = serializers.ListField(child=serializers.ChoiceField(choices=[
        "callback_requested", "transferred", "opted_out", "ended_by_assistant", "answered"]))
    engine = serializers.ChoiceField(choices=["llm", "policy"])
    assistant_version = serializers.IntegerField(allow_null=True, help_text="The version of the assistant the "
                                                                            "call ran with (null: its draft).")
    created_at = serializers.DateTimeField()


class CallDetailSerializer(CallSerializer):
    """One call (`GET /v2/calls/{id}`): the list's fields, its analysis (null until it
    is written, after the call ended) and how fast the voice agent answered in it."""

    analysis = serializers.SerializerMethodField()
    latency = serializers.SerializerMethodField()

    @extend_schema_field(CallLatencySerializer(allow_null=True))
    def get_latency(self, call):
        return self.context["latency"]

    @extend_schema_field(CallAnalysisSerializer(allow_null=True))
    def get_analysis(self, call):
        analysis = getattr(call, "analysis", None)  # None: no row (the reverse one-to-one raises)
        if analysis is None:
            return None
        data = analysis_data(analysis)
        # The tenant's JSON as DRF's renderer writes it: the view's fast renderer takes
        # it as it is (its floats could be written otherwise), DRF's parses it back.
        data["structured"] = ReadyJSON(json.dumps(data["structured"], ensure_ascii=False, separators=(",", ":")))
        return data


class CallListQuerySerializer(PageQuerySerializer):
    """`GET /v2/calls`: a page (`limit`, `cursor`) and the filters, all combinable (AND)."""

    status = ListedChoiceField(choices=Call.Status.choices, required=False)
    direction = ListedChoiceField(choices=Call.Direction.choices, required=False)
    number = PhoneQueryField(required=False, max_length=40,
                             help_text="Calls from or to this number, in any format (`030 901820`, `+49 30 901820`).")
    since = MomentField(required=False, help_text="Calls created at or after this ISO 8601 time.")
    until = MomentField(required=False, help_text="Calls created before this ISO 8601 time.")
    lead = serializers.CharField(required=False, max_length=40, help_text="Calls of this lead (`ld_…`).")


class UsageSerializer(serializers.Serializer):
    tenant = serializers.CharField()
    period = serializers.CharField()
    minutesThisMonth = serializers.IntegerField()
    secondsThisMonth = serializers.IntegerField()
    minuteCap = serializers.IntegerField()
    reservedMinutes = serializers.IntegerField()
    remainingMinutes = serializers.IntegerField()
    resetsAt = serializers.DateTimeField()


class OutboundCallRequestSerializer(ClosedSerializer):
    to = serializers.CharField()
    # `from` is a keyword, so the field is declared below under its JSON name.
    leadId = serializers.CharField(required=False, allow_null=True, max_length=40)
    # Who talks to the callee (default the calling number's assistant, else the tenant's first).
    assistant = serializers.CharField(required=False, allow_null=True, max_length=40)

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.CharField(required=False, allow_null=True, max_length=40)
        return fields

    def validate_to(self, value):
        # Dialling takes E.164 only (no national formats): '+', country code, number.
        message = "'to' must be a valid number in E.164 format, e.g. +4930123456."
        if not E164.match(value):
            raise serializers.ValidationError(message)
        try:
            return to_e164(value)
        except InvalidPhoneNumber:
            raise serializers.ValidationError(message) from None


class OutboundCallSerializer(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.CharField()
    maxSeconds = serializers.IntegerField(source="max_seconds")
