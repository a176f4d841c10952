"""Bodies of OpenAI's models and audio paths (`/v1/models`, `/v1/audio/…`), as its
clients send them (docs/api.md, "OpenAI-compatible")."""
from rest_framework import serializers

from console.fields import ClosedSerializer
from gateway_app.serializers import LANGUAGE_ERROR, LANGUAGE_PATTERN, BudgetField, StrictCharField
from gateway_app.transcript_formats import TRANSCRIPT_FORMATS
from speech_app.formats import MAX_SPEED, MIN_SPEED, SPEECH_FORMATS

# OpenAI's limit of a speech request's input.
MAX_SPEECH_INPUT_CHARS = 4096
# OpenAI's voices: spoken by the lane's own voice (its language's), since no lane has them.
OPENAI_VOICES = ("alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer", "verse",
                 "marin", "cedar")


class ModelSerializer(serializers.Serializer):
    """OpenAI's `model` object."""

    id = serializers.CharField(help_text="`auto`, a lane's id, or the name asked for.")
    object = serializers.ChoiceField(choices=["model"])
    created = serializers.IntegerField(help_text="The registry document's `updated` day, Unix seconds.")
    owned_by = serializers.CharField(help_text="The lane's provider; `stimmwerk` for `auto`.")


class ModelListSerializer(serializers.Serializer):
    """OpenAI's list of models."""

    def get_fields(self) -> dict[str, serializers.Field]:  # `data` is a serializer's own attribute, so the fields are named here
        return {"object": serializers.ChoiceField(choices=["list"]), "data": ModelSerializer(many=True)}


class TranscriptionRequestSerializer(serializers.Serializer):
    """OpenAI's transcription form (multipart). Unknown form fields are left alone, as
    OpenAI's newer ones (`include[]`, `chunking_strategy`) may come from any client."""

    def get_fields(self) -> dict[str, serializers.Field]:  # `timestamp_granularities[]` is the form field's name
        return {
            "file": serializers.FileField(help_text="The audio: WAV, MP3, OGG, WebM, FLAC, M4A …"),
            "model": serializers.CharField(max_length=100, help_text="whisper-1, gpt-4o-transcribe, "
                                           "gpt-4o-mini-transcribe or auto: the registry's stt lanes."),
            "language": serializers.RegexField(LANGUAGE_PATTERN, required=False, error_messages=LANGUAGE_ERROR,
                                               help_text="Default de."),
            "prompt": serializers.CharField(required=False, allow_blank=True, max_length=4000,
                                            help_text="Accepted, not used."),
            "response_format": serializers.ChoiceField(choices=TRANSCRIPT_FORMATS, required=False, default="json"),
            "temperature": serializers.FloatField(required=False, min_value=0, max_value=1,
                                                  help_text="Accepted, not used."),
            "timestamp_granularities[]": serializers.ListField(
                child=serializers.ChoiceField(choices=["word", "segment"]), required=False,
                help_text="`word` adds the words to verbose_json."),
            "stream": serializers.BooleanField(required=False, default=False, help_text="false only."),
            "max_eur": serializers.FloatField(required=False, min_value=0, max_value=100,
                                              help_text="The gateway's budget of this request."),
        }

    def validate_stream(self, value: bool) -> bool:
        if value:
            raise serializers.ValidationError("A transcription is answered whole: send stream=false.")
        return value


class SpeechRequestSerializer(ClosedSerializer):
    """OpenAI's speech request (JSON)."""

    model = StrictCharField(max_length=100, help_text="tts-1, tts-1-hd, gpt-4o-mini-tts or auto: the registry's "
                                                      "tts lanes.")
    input = StrictCharField(max_length=MAX_SPEECH_INPUT_CHARS, trim_whitespace=False)
    voice = StrictCharField(max_length=60, help_text="One of OpenAI's voices (alloy, …: the lane's own voice) "
                                                     "or a voice of the lanes (eSpeak NG's `de+m3`, a Piper "
                                                     "voice).")
    response_format = serializers.ChoiceField(choices=list(SPEECH_FORMATS), required=False, default="mp3")
    speed = serializers.FloatField(required=False, default=1.0, min_value=MIN_SPEED, max_value=MAX_SPEED)
    instructions = StrictCharField(required=False, allow_blank=True, max_length=MAX_SPEECH_INPUT_CHARS,
                                   help_text="Accepted, not used.")
    stream_format = serializers.ChoiceField(choices=["audio"], required=False, help_text="audio only.")
    language = serializers.RegexField(LANGUAGE_PATTERN, required=False, error_messages=LANGUAGE_ERROR,
                                      help_text="The gateway's own: the language of the lanes' voice.")
    max_eur = BudgetField(help_text="The gateway's budget of this request (default GATEWAY_MAX_EUR).")

    def validate_input(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("The input is empty.")
        return value
