from rest_framework import serializers

from console.fields import ClosedSerializer
from speech_app.decode import MAX_AUDIO_BYTES

MAX_PHRASES = 500


class PhrasesField(serializers.ListField):
    child = serializers.CharField(max_length=200, trim_whitespace=True)

    def __init__(self, **kwargs):
        super().__init__(required=False, allow_empty=True, max_length=MAX_PHRASES, **kwargs)


class VoiceField(serializers.CharField):
    def __init__(self, **kwargs):
        super().__init__(required=False, max_length=60, **kwargs)


class TranscribeRequestSerializer(ClosedSerializer):
    audio_base64 = serializers.CharField(
        allow_blank=True, trim_whitespace=False,
        help_text=f"Base64 of MP3, WAV, OGG/Opus, WebM or M4A audio, at most {MAX_AUDIO_BYTES} bytes and 10 minutes.")
    filename = serializers.CharField(required=False, allow_blank=True, max_length=255,
                                     help_text="Informational; the format is recognised from the content.")
    language = serializers.JSONField(
        required=False, help_text="Language, ^[a-z]{2,3}$, or auto (Whisper detects it); default: the tenant's "
                                  "language (de unless set otherwise).")
    phrases = PhrasesField(help_text="Vosk: restrict recognition to these words or phrases. Whisper: hotwords, a "
                                     "hint that favours them without excluding other words.")


class SpeakRequestSerializer(ClosedSerializer):
    text = serializers.CharField(max_length=5000)
    voice = VoiceField()


# The transcript as /v2/audio/transcribe and /api/voice/transcribe answer it
# (speech_app.recognition.Transcript.as_json), for the OpenAPI document only.
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


# GET /v2/meta/voices (speech_app.selectors.OfferedVoice.as_json), for the OpenAPI document only.
class OfferedVoiceSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The value of an assistant's `voice`: `<lane>:<voice>` (a bare name for a "
                                         "Piper voice of this process that no lane lists).")
    lane = serializers.CharField()
    voice = serializers.CharField(help_text="The voice's own name at its provider or engine.")
    provider = serializers.CharField()
    languages = serializers.ListField(child=serializers.CharField())
    local = serializers.BooleanField(help_text="Spoken by this service's engines: no audio or text leaves it.")
    protocol = serializers.CharField(help_text="The lane's wire protocol (`local`, `azure-tts`, "
                                               "`elevenlabs-stream`, `cartesia-ws`, `openai-audio`).")
    usableNow = serializers.BooleanField()
    reason = serializers.CharField(required=False, help_text="Why it is not usable now (no key, a cooldown, …).")

    class Meta:
        ref_name = "OfferedVoice"


class VoicesSerializer(serializers.Serializer):
    voices = OfferedVoiceSerializer(many=True)

    class Meta:
        ref_name = "Voices"
