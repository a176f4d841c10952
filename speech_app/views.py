"""Speech endpoints: /v2/audio/transcribe, /v2/meta/engines, /v2/meta/voices and the hub's speech module (/api/voice/…).

Both reuse the same engines and services; the speech module needs a credential but
no tenant (CONTRACT §1).
"""
import zoneinfo

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.settings import api_settings

from console.api import ApiView, OpenAPIView, TenantAPIView, accepts_query, validated
from console.engines import carrier_probes, engine_probes
from console.errors import ValidationFailed
from console.openapi import errors
from console.schema_types import EnginesSerializer, ModuleHealthSerializer
from registry_app import snapshot
from registry_app.probe_auth import ProbeAuthentication
from speech_app import selectors, services
from speech_app.http import MP3_RESPONSE, AnyAcceptNegotiation, BoundedJSONParser, mp3_response, raw_audio_body
from speech_app.serializers import (
    SpeakRequestSerializer,
    TranscribeRequestSerializer,
    TranscriptSerializer,
    VoicesSerializer,
)


def tenant_now(tenant):
    """Now on the tenant's clock: "morgen um halb drei" means the tenant's tomorrow."""
    return timezone.now().astimezone(zoneinfo.ZoneInfo(tenant.time_zone))


class AudioTranscribeView(TenantAPIView):
    parser_classes = [BoundedJSONParser]
    audit_writes = False  # a POST that stores nothing: not a write for the audit trail

    @extend_schema(request=TranscribeRequestSerializer, summary="Transcribe base64 audio", extensions=errors(422),
                   responses=TranscriptSerializer)
    def post(self, request):
        data = validated(TranscribeRequestSerializer, request.data)
        audio = services.audio_from_base64(data["audio_base64"])
        # Without a language, the tenant's (German unless the tenant says otherwise).
        transcript = services.audio_transcribe(audio=audio, language=data.get("language"),
                                               default_language=request.tenant.language, phrases=data.get("phrases"))
        return Response(transcript.as_json(now=tenant_now(request.tenant)))


class SpeakView(ApiView):
    content_negotiation_class = AnyAcceptNegotiation

    @extend_schema(request=SpeakRequestSerializer, responses=MP3_RESPONSE, summary="Speak a text as MP3")
    def post(self, request):
        data = validated(SpeakRequestSerializer, request.data)
        rendered, _ = services.speech_render(text=data["text"], voice=data.get("voice"))
        return mp3_response(rendered)


class ModuleTranscribeView(ApiView):
    # The body is the audio file itself, whatever its Content-Type; the view reads it.
    parser_classes = []

    @accepts_query(
        OpenApiParameter("language", str, description="Language, ^[a-z]{2,3}$ or auto (Whisper detects it); "
                                                       "default de."),
        OpenApiParameter("phrase", str, many=True, description="Vosk: restrict recognition to these phrases; "
                                                             "Whisper: hotwords, a hint."),
    )
    @extend_schema(
        request={"application/octet-stream": OpenApiTypes.BINARY},
        summary="Transcribe raw audio bytes",
        extensions=errors(422),
        responses=TranscriptSerializer,
    )
    def post(self, request):
        phrases = request.query_params.getlist("phrase")
        if any(not phrase.strip() or len(phrase) > 200 for phrase in phrases):
            raise ValidationFailed.field("phrase", "Each phrase has 1 to 200 characters.")
        transcript = services.audio_transcribe(audio=raw_audio_body(request),
                                               language=request.query_params.get("language"),
                                               phrases=[phrase.strip() for phrase in phrases])
        return Response(transcript.as_json())


class ModuleHealthView(ApiView):
    # probe_registry's credential too: the registry's speech lanes name this path as their health check.
    # The stubs give the setting as written (dotted paths); api_settings imports the classes.
    authentication_classes = [ProbeAuthentication, *api_settings.DEFAULT_AUTHENTICATION_CLASSES]  # type: ignore[list-item]

    @extend_schema(summary="State of the speech module's engines", responses=ModuleHealthSerializer)
    def get(self, request):
        statuses = [status for status in engine_probes.statuses() if status.kind in ("tts", "stt")]
        # Vosk without models is optional equipment, not a fault: ok needs synthesis
        # and one recognition engine.
        usable = {status.kind for status in statuses if status.usable_now}
        return Response({
            "ok": usable == {"tts", "stt"},
            "engines": [status.as_json() for status in statuses],
        })


class EnginesView(OpenAPIView):
    @extend_schema(summary="Speech engines and telephony carriers with their state now", responses=EnginesSerializer)
    def get(self, request):
        """This process's engines (they serve with or without a registry), then the
        registry's tts and stt lanes (speech_app.selectors.speech_lane_states)."""
        local = engine_probes.statuses()
        return Response({
            "engines": [{**s.as_json(), "source": "process"} for s in local]
            + selectors.speech_lane_states(snapshot.current(), local),
            "carriers": carrier_probes.statuses(),
        })


class VoicesView(OpenAPIView):
    @extend_schema(summary="The voices an assistant may speak with", responses=VoicesSerializer)
    def get(self, request):
        """The voices of the registry's callable tts lanes (speech_app.selectors.offered_voices):
        each `id` is a value of an assistant's `voice`."""
        voices = selectors.offered_voices(snapshot.current(), engine_probes.statuses(max_age=60))
        return Response({"voices": [voice.as_json() for voice in voices]})
