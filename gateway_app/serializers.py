"""Bodies and query parameters of the gateway paths."""
import datetime
from typing import TYPE_CHECKING, Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.fields import ClosedSerializer
from gateway_app.models import LaneUsage

if TYPE_CHECKING:  # what the stubs take for error messages
    from django.utils.functional import _StrPromise

LANGUAGE_PATTERN = r"^[a-z]{2,3}$"
LANGUAGE_ERROR: "dict[str, str | _StrPromise]" = {"invalid": "A language is a 2- or 3-letter lowercase code such as 'de'."}
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


class AudioFileSerializer(serializers.Serializer):
    """POST /v1/transcribe as a multipart form: the audio is its `file`."""

    file = serializers.FileField(help_text="The audio (a Whisper-style upload).")


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


# --- POST /v1/chat/completions (OpenAI-compatible) ---
# The nested parts (messages, tools, tool_choice) are checked by gateway_app.turns, the
# one checker of a turn, which names each problem by its path (`messages[2].content`);
# the fields below only declare them for the OpenAPI document.

_TEXT_OR_PARTS = {"oneOf": [{"type": "string"}, {"type": "array", "items": {
    "type": "object", "properties": {"type": {"type": "string", "enum": ["text"]}, "text": {"type": "string"}},
    "required": ["type", "text"]}}]}
_TOOL_CALL = {"type": "object", "required": ["id", "type", "function"], "properties": {
    "id": {"type": "string"}, "type": {"type": "string", "enum": ["function"]},
    "function": {"type": "object", "required": ["name", "arguments"], "properties": {
        "name": {"type": "string"}, "arguments": {"type": "string", "description": "JSON text"}}}}}


@extend_schema_field({"type": "array", "minItems": 1, "items": {
    "type": "object", "required": ["role"], "properties": {
        "role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool"]},
        "content": {**_TEXT_OR_PARTS, "nullable": True}, "name": {"type": "string"},
        "tool_calls": {"type": "array", "items": _TOOL_CALL}, "tool_call_id": {"type": "string"}}}})
class MessagesField(serializers.JSONField):
    pass


@extend_schema_field({"type": "array", "items": {
    "type": "object", "required": ["type", "function"], "properties": {
        "type": {"type": "string", "enum": ["function"]},
        "function": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}, "description": {"type": "string"},
            "parameters": {"type": "object", "description": "JSON Schema of the arguments"},
            "strict": {"type": "boolean"}}}}}})
class ToolsField(serializers.JSONField):
    pass


@extend_schema_field({"oneOf": [{"type": "string", "enum": ["none", "auto", "required"]}, {
    "type": "object", "required": ["type", "function"], "properties": {
        "type": {"type": "string", "enum": ["function"]},
        "function": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}]})
class ToolChoiceField(serializers.JSONField):
    pass


class StrictBooleanField(serializers.BooleanField):
    """A JSON true or false, never "yes" or 1."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            raise serializers.ValidationError("Must be true or false.")
        return data


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            raise serializers.ValidationError("Must be an integer.")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise serializers.ValidationError("Must be a number.")
        return super().to_internal_value(data)


class StreamOptionsSerializer(ClosedSerializer):
    include_usage = StrictBooleanField(required=False, default=False)


@extend_schema_field({"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": 4}],
                      "nullable": True})
class StopField(serializers.JSONField):
    """`stop`: a string or up to 4 strings (each 1 to 200 characters), as a tuple."""

    def to_internal_value(self, data: Any) -> Any:  # a tuple of strings
        stops = [data] if isinstance(data, str) else data
        if stops is None:
            return ()
        if (not isinstance(stops, list) or len(stops) > 4
                or not all(isinstance(stop, str) and 0 < len(stop) <= 200 for stop in stops)):
            raise serializers.ValidationError("Must be a string or a list of up to 4 strings of 1 to 200 characters.")
        return tuple(stops)


RESPONSE_FORMATS = ("text", "json_object", "json_schema")


@extend_schema_field({"type": "object", "required": ["type"], "properties": {
    "type": {"type": "string", "enum": list(RESPONSE_FORMATS)},
    "json_schema": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"}, "description": {"type": "string"},
        "schema": {"type": "object", "description": "JSON Schema of the answer"}, "strict": {"type": "boolean"}}}}})
class ResponseFormatField(serializers.JSONField):
    """`response_format`: None for text, else `{"type": "json_object"}` or
    `{"type": "json_schema", "json_schema": {"name", "schema"?, …}}` as sent."""

    def to_internal_value(self, data: Any) -> Any:  # a dict, or None for text
        kind = data.get("type") if isinstance(data, dict) else None
        if kind not in RESPONSE_FORMATS:
            raise serializers.ValidationError(f"Must be an object whose type is one of: {', '.join(RESPONSE_FORMATS)}.")
        if kind == "json_schema":
            spec = data.get("json_schema")
            if (not isinstance(spec, dict) or not isinstance(spec.get("name"), str)
                    or not isinstance(spec.get("schema", {}), dict)):
                raise serializers.ValidationError('json_schema is {"name", "schema"?: {…}, "strict"?}.')
        return None if kind == "text" else data


class IgnoredField(serializers.JSONField):
    """A field of OpenAI's request the gateway accepts and does not use (docs/api.md)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, allow_null=True, help_text="Accepted, not used.", **kwargs)


class ChatCompletionRequestSerializer(ClosedSerializer):
    """OpenAI's Chat Completions request. Every field of OpenAI's is accepted: the
    sampling fields are passed to the lanes, the rest accepted and not used; only
    `n` > 1 and the legacy `functions` are refused."""

    refused = {"functions": "Send tools: [{\"type\": \"function\", \"function\": {…}}] instead.",
               "function_call": "Send tool_choice instead."}

    model = StrictCharField(max_length=200, help_text="`auto` (the registry's order by its cost policy), a chat "
                                                      "or code lane's id (GET /v1/models), a lane's provider model "
                                                      "name, or one of OpenAI's names (gpt-4o, …) that stand for "
                                                      "`auto`. Else 404 `model_not_found`.")
    messages = MessagesField()
    tools = ToolsField(required=False)
    tool_choice = ToolChoiceField(required=False)
    stream = StrictBooleanField(required=False, default=False)
    stream_options = StreamOptionsSerializer(required=False)
    temperature = StrictFloatField(required=False, min_value=0, max_value=2)
    top_p = StrictFloatField(required=False, allow_null=True, min_value=0, max_value=1)
    stop = StopField(required=False, allow_null=True)
    seed = StrictIntegerField(required=False, allow_null=True, min_value=-(2 ** 63), max_value=2 ** 63 - 1)
    response_format = ResponseFormatField(required=False, allow_null=True)
    frequency_penalty = StrictFloatField(required=False, min_value=-2, max_value=2)
    presence_penalty = StrictFloatField(required=False, min_value=-2, max_value=2)
    max_tokens = StrictIntegerField(required=False, min_value=1,
                                    help_text="At most GATEWAY_MAX_TOKENS (a larger value is lowered to it).")
    max_completion_tokens = StrictIntegerField(required=False, min_value=1, help_text="The same as max_tokens; "
                                                                                       "the smaller one counts.")
    n = StrictIntegerField(required=False, min_value=1, max_value=1, help_text="One choice only.",
                           error_messages={"max_value": "One choice only: n must be 1."})
    user = StrictCharField(required=False, max_length=256, help_text="Accepted, not used (never sent to a lane).")
    logit_bias = IgnoredField()
    logprobs = IgnoredField()
    top_logprobs = IgnoredField()
    parallel_tool_calls = IgnoredField()
    store = IgnoredField()
    metadata = IgnoredField()
    service_tier = IgnoredField()
    reasoning_effort = IgnoredField()
    verbosity = IgnoredField()
    modalities = IgnoredField()
    prediction = IgnoredField()
    prompt_cache_key = IgnoredField()
    safety_identifier = IgnoredField()
    max_eur = BudgetField(help_text="The gateway's budget of this request (default GATEWAY_MAX_EUR).")
    language = serializers.RegexField(LANGUAGE_PATTERN, required=False, error_messages=LANGUAGE_ERROR,
                                      help_text="Only lanes that list this language.")


class ChatCompletionUsageSerializer(serializers.Serializer):
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()


class ChatCompletionMessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["assistant"])
    content = serializers.CharField(allow_null=True)
    tool_calls = serializers.ListField(child=serializers.DictField(), required=False,
                                       help_text="Only when the lane called tools.")


class ChatCompletionChoiceSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    message = ChatCompletionMessageSerializer()
    finish_reason = serializers.ChoiceField(choices=["stop", "length", "tool_calls", "content_filter"])


class ChatCompletionSerializer(serializers.Serializer):
    """OpenAI's `chat.completion` object. A streamed answer is `chat.completion.chunk`
    server-sent events ending with `data: [DONE]`."""

    id = serializers.CharField()
    object = serializers.ChoiceField(choices=["chat.completion"])
    created = serializers.IntegerField()
    model = serializers.CharField(help_text="The lane that answered.")
    choices = ChatCompletionChoiceSerializer(many=True)
    usage = ChatCompletionUsageSerializer()


# --- The streamed answer: server-sent events of `chat.completion.chunk` ---

class ChatCompletionDeltaSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["assistant"], required=False, help_text="In the first chunk only.")
    content = serializers.CharField(required=False, help_text="The next piece of the answer's text.")
    tool_calls = serializers.ListField(child=serializers.DictField(), required=False, help_text=(
        "A complete tool call each: {index, id, type: function, function: {name, arguments: JSON text}}."))


class ChatCompletionChunkChoiceSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    delta = ChatCompletionDeltaSerializer()
    finish_reason = serializers.ChoiceField(choices=["stop", "length", "tool_calls", "content_filter"],
                                            allow_null=True, help_text="In the last chunk of the answer only.")


class ChatCompletionChunkSerializer(serializers.Serializer):
    """One event of a streamed answer (`stream: true`): the JSON after `data: `."""

    id = serializers.CharField(help_text="The same in every chunk of one answer.")
    object = serializers.ChoiceField(choices=["chat.completion.chunk"])
    created = serializers.IntegerField()
    model = serializers.CharField(help_text="The lane that answered.")
    choices = ChatCompletionChunkChoiceSerializer(many=True, help_text="Empty in the usage chunk.")
    usage = ChatCompletionUsageSerializer(required=False, help_text=(
        "Only in the last chunk before [DONE], with stream_options.include_usage."))


CHAT_COMPLETION_ANSWERS = (
    "`application/json` (`stream` false or absent): one `chat.completion` object. `text/event-stream` (`stream: "
    "true`): server-sent events, each one line `data: <JSON>` and a blank line, the JSON a "
    "`chat.completion.chunk` (its schema under this media type): the first with `delta.role`, then the text in "
    "`delta.content` pieces and each tool call, complete, in `delta.tool_calls`, then one with `finish_reason`; "
    "with `stream_options.include_usage` a last chunk with `usage` and no choices. The stream ends with "
    "`data: [DONE]`. A lane that fails after the answer began ends it with one `data: {\"error\": {\"code\", "
    "\"message\", \"details\"}}` event (the API's error shape) and no [DONE].")
