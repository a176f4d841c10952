from typing import Any

from django.utils.functional import lazy
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import SkipField, empty

from console.assistants.builtin_tools import builtin_tool_names
from console.assistants.models import DEFAULT_OPENING_TOUCHPOINT, MODES, Assistant
from console.assistants.validation import (
    MAX_DESCRIPTION,
    MAX_END_CALL_PHRASES,
    MAX_GREETING,
    MAX_INSTRUCTIONS,
    MAX_KNOWLEDGE,
    MAX_NAME,
    MAX_SUCCESS_CRITERIA,
    MAX_TOKENS,
    MAX_TOOLS,
)
from console.fields import ClosedSerializer, NullIfEmptyField
from console.listing import Listing

# Read when the schema is made: the built-in tools are registered by the apps' ready().
_TOOLS_HELP = lazy(lambda: f"Built-in tools ({', '.join(builtin_tool_names())}) and ids of the tenant's HTTP tools "
                           "(tl_…).", str)()

# `model` and `analysis` as the API shows them (their sources: an assistant's columns)
# and as a body describes them (checked by console.assistants.validation).
class AssistantModelSerializer(serializers.Serializer):
    capability = serializers.ChoiceField(choices=["chat"], default="chat")  # an assistant has no other
    lane = NullIfEmptyField(source="model_lane", required=False, max_length=100,
                            help_text="A chat lane of the registry; null: the router's choice (cost policy).")
    temperature = serializers.FloatField(source="model_temperature", allow_null=True, required=False, min_value=0,
                                         max_value=2,
                                         help_text="0–2, kept to two decimals; null: the lane's default.")
    maxTokens = serializers.IntegerField(source="model_max_tokens", allow_null=True, required=False, min_value=1,
                                         max_value=MAX_TOKENS,
                                         help_text="Longest answer in tokens; null: the gateway's default.")


class TranscriberSerializer(serializers.Serializer):
    lane = serializers.CharField(max_length=100, required=False, help_text=(
        "A streaming stt lane of the registry (params.protocol); absent: this service's recognition."))
    keyterms = serializers.ListField(child=serializers.CharField(max_length=100), max_length=100, required=False,
                                     help_text="Names and terms the recogniser is told to expect (Deepgram keyterm; "
                                               "the local Whisper's prompt, with or without a lane).")


class RealtimeSerializer(serializers.Serializer):
    lane = serializers.CharField(max_length=100, help_text="A voice-agent lane of the registry whose protocol is a "
                                                           "realtime one (openai-realtime), e.g. voice-agent-realtime.")


class TransferTargetSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    e164 = serializers.CharField(max_length=40, help_text="Any format is accepted; stored and shown as E.164.")
    warm = serializers.BooleanField(required=False, help_text=(
        "true: a warm hand-over by default — the person is rung first and hears a short summary, the caller "
        "joins after it (transfer_call's mode); shown only when true."))


class AssistantAnalysisSerializer(serializers.Serializer):
    summary = serializers.BooleanField(source="analysis_summary", default=True,
                                       help_text="Write a German summary of each call.")
    schema = serializers.DictField(source="analysis_schema", allow_null=True, required=False,
                                   help_text="A JSON Schema (Draft 2020-12, root `\"type\": \"object\"`) of the "
                                             "structured data extracted from each call; null: none.")
    successCriteria = serializers.CharField(source="analysis_success_criteria", required=False, allow_blank=True,
                                            max_length=MAX_SUCCESS_CRITERIA,
                                            help_text="When a call counts as a success.")


class _AnyJSON(serializers.JSONField):
    def validate_empty_values(self, data):
        # Absent: left to the validation of the whole body (which reports every
        # problem at once, a missing `name` among them), even where it is required.
        if data is empty:
            raise SkipField()
        return super().validate_empty_values(data)


def documented(field, *, required=False):
    """A request field that takes any JSON value, null too (console.assistants.validation
    checks it, for the API and the admin alike, and says what null means for each field)
    and that the document describes as `field`."""
    return extend_schema_field(field)(type("DocumentedJSONField", (_AnyJSON,), {}))(required=required,
                                                                                   allow_null=True)


class AssistantSerializer(serializers.ModelSerializer):
    openingTouchpoint = serializers.CharField(source="opening_touchpoint")
    tools = serializers.ListField(child=serializers.CharField())
    knowledge = serializers.ListField(child=serializers.CharField(), allow_null=True)
    transcriber = serializers.JSONField(read_only=True, help_text="{\"lane\", \"keyterms\"}; {}: none.")
    mode = serializers.ChoiceField(choices=list(MODES), help_text="pipeline (default) or realtime (speech to speech "
                                                                  "through the `realtime` lane).")
    realtime = serializers.JSONField(read_only=True, help_text="{\"lane\"}: the voice-agent lane; {}: none.")
    model = AssistantModelSerializer(source="*", read_only=True)
    transferTargets = TransferTargetSerializer(source="transfer_targets", many=True)
    analysis = AssistantAnalysisSerializer(source="*", read_only=True)
    maxDurationSec = serializers.IntegerField(source="max_duration_sec", allow_null=True)
    silenceTimeoutSec = serializers.IntegerField(source="silence_timeout_sec", allow_null=True)
    endCallPhrases = serializers.ListField(source="end_call_phrases", child=serializers.CharField())
    appointmentTypes = serializers.ListField(source="appointment_types", child=serializers.DictField(),
                                             help_text="What callers may book (docs/api.md, \"Appointment types\").")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    class Meta:
        model = Assistant
        fields = ["id", "name", "description", "language", "voice", "transcriber", "mode", "realtime",
                  "instructions", "openingTouchpoint", "greeting",
                  "tools", "knowledge", "model", "transferTargets", "analysis", "maxDurationSec", "silenceTimeoutSec",
                  "endCallPhrases", "appointmentTypes", "createdAt", "updatedAt"]
        read_only_fields = fields


class AssistantCreateSerializer(ClosedSerializer):
    """The body of POST /v2/assistants. This serializer describes the fields and refuses
    unknown ones; their values are checked by console.assistants.validation."""

    name = documented(serializers.CharField(max_length=MAX_NAME), required=True)
    description = documented(serializers.CharField(max_length=MAX_DESCRIPTION, allow_blank=True))
    language = documented(serializers.CharField(max_length=8, help_text="BCP 47, e.g. de (the default), en, de-AT."))
    voice = documented(serializers.CharField(max_length=64, allow_blank=True, help_text="\"\": the engine's default."))
    transcriber = documented(TranscriberSerializer(allow_null=True))
    mode = documented(serializers.ChoiceField(
        choices=list(MODES), allow_null=True,
        help_text="pipeline (the default; null too) or realtime: a voice-agent lane (`realtime`) hears, thinks "
                  "and speaks; the disclosure is spoken first by us."))
    realtime = documented(RealtimeSerializer(allow_null=True))
    instructions = documented(serializers.CharField(max_length=MAX_INSTRUCTIONS, allow_blank=True,
                                                    help_text="The system prompt, German text."))
    openingTouchpoint = documented(serializers.CharField(
        help_text=f"A catalog touchpoint that opens a call; default {DEFAULT_OPENING_TOUCHPOINT}."))
    greeting = documented(serializers.CharField(
        max_length=MAX_GREETING, allow_blank=True,
        help_text="The assistant's own first words after the AI disclosure; \"\": the opening "
                  "touchpoint's script. Linted like a script (errors refused)."))
    tools = documented(serializers.ListField(
        child=serializers.CharField(), max_length=MAX_TOOLS,
        help_text=_TOOLS_HELP))
    knowledge = documented(serializers.ListField(
        child=serializers.CharField(), allow_null=True, max_length=MAX_KNOWLEDGE,
        help_text="Ids of the tenant's knowledge documents the assistant may use; null: all of them."))
    model = documented(AssistantModelSerializer())
    transferTargets = documented(TransferTargetSerializer(many=True))
    analysis = documented(AssistantAnalysisSerializer())
    maxDurationSec = documented(serializers.IntegerField(
        allow_null=True, min_value=1, help_text="At most the tenant's maximum call length; null: that length."))
    silenceTimeoutSec = documented(serializers.IntegerField(allow_null=True, min_value=2, max_value=600))
    endCallPhrases = documented(serializers.ListField(child=serializers.CharField(max_length=200),
                                                      max_length=MAX_END_CALL_PHRASES))
    appointmentTypes = documented(serializers.ListField(
        child=serializers.DictField(), max_length=20,
        help_text="What callers may book: [{name, durationMinutes, calendar, hours, …}] (docs/api.md)."))

    def to_internal_value(self, data):
        super().to_internal_value(data)  # unknown fields
        return dict(data)


class AssistantUpdateSerializer(AssistantCreateSerializer):
    """The body of PATCH /v2/assistants/{id}: the fields to change (within `model` and
    `analysis`, the keys to change)."""

    require_one = True
    name = documented(serializers.CharField(max_length=MAX_NAME))


# `GET /v2/assistants` (console/listing.py): every assistant of the tenant, by name.
ASSISTANTS = Listing("assistants", AssistantSerializer, ordering=("name", "id"))


# --- Versions -------------------------------------------------------------------------

SHOWN_OUT = ("id", "createdAt", "updatedAt")  # a version shows the assistant's behaviour only


def shown_config(assistant: Assistant) -> dict[str, Any]:
    """An assistant (a version's or the draft) as a version shows it: its API fields but
    its identity and timestamps."""
    data = AssistantSerializer(assistant).data
    return {name: value for name, value in data.items() if name not in SHOWN_OUT}


class VersionChangeSerializer(serializers.Serializer):
    field = serializers.CharField(help_text="The API field that changed; nested ones by path (`model.lane`).")
    before = serializers.JSONField(required=False, help_text="Its value before (absent for `instructions`).")
    after = serializers.JSONField(required=False, help_text="Its value after (absent for `instructions`).")
    diff = serializers.CharField(required=False, help_text="`instructions` only: a unified line diff.")


class AssistantVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField(help_text="1, 2, … (shown as v1, v2, …).")
    # A field named like Field.label, which the stubs type as that attribute.
    label = serializers.CharField(help_text="`v1`, `v2`, …")  # type: ignore[assignment]
    note = serializers.CharField(allow_blank=True)
    publishedBy = serializers.CharField(help_text="`key:<prefix>`, `user:<name>` or `migration`.")
    publishedAt = serializers.DateTimeField()
    live = serializers.BooleanField(help_text="The latest version: what unpinned numbers answer with.")
    assistant = serializers.DictField(help_text="The assistant as this version has it (the fields of an "
                                                "assistant but `id`, `createdAt`, `updatedAt`).")
    recorded = serializers.DictField(help_text="What the version recorded of what it names: `http_tools`, each "
                                               "HTTP tool's `{name, description, parameters}` by its id ({} for "
                                               "the v1 of the migration: its tools are used as they are).")
    changes = VersionChangeSerializer(many=True, help_text="What changed against the previous version "
                                                           "(v1: against nothing, every field).")


class AssistantVersionListSerializer(serializers.Serializer):
    versions = AssistantVersionSerializer(many=True, help_text="Newest first.")
    live = serializers.IntegerField(allow_null=True, help_text="The latest version; null: never published "
                                                               "(calls are answered with the draft).")
    draftChanges = VersionChangeSerializer(many=True, help_text="What the draft changes against the live "
                                                                "version (unpublished); [] when none.")


class AssistantPublishSerializer(ClosedSerializer):
    note = serializers.CharField(max_length=500, required=False, allow_blank=True, default="",
                                 help_text="Why: shown in the version history.")
    force = serializers.BooleanField(required=False, default=False,
                                     help_text="Publish even when a test case fails (the note records it).")
