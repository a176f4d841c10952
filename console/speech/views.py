"""Audio endpoints of the Console API (/v2/audio/…) and the hub's speech module (/api/voice/…).

Both reuse the same engines and services; the speech module needs a credential but
no tenant (CONTRACT §1).
"""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import TenantAPIView, validated
from console.errors import ValidationFailed
from console.speech import services
from console.speech.http import AnyAcceptNegotiation, BoundedJSONParser, mp3_response, raw_audio_body
from console.speech.probes import recognition_status, synthesis_status
from console.speech.serializers import (
    AudioSettingsPatchSerializer,
    RenderRequestSerializer,
    SpeakRequestSerializer,
    TranscribeRequestSerializer,
    audio_settings_json,
)

MP3_RESPONSE = OpenApiResponse(OpenApiTypes.BINARY, description="audio/mpeg, headers X-Duration-Sec and ETag")


class AudioRenderView(TenantAPIView):
    content_negotiation_class = AnyAcceptNegotiation

    @extend_schema(request=RenderRequestSerializer, responses={200: MP3_RESPONSE},
                   summary="The effective script of a touchpoint as MP3")
    def post(self, request):
        data = validated(RenderRequestSerializer, request.data)
        rendered, _ = services.script_render(tenant=request.tenant, touchpoint=data["touchpoint"],
                                             variables=data["variables"], voice=data.get("voice"))
        return mp3_response(rendered)


class AudioTranscribeView(TenantAPIView):
    parser_classes = [BoundedJSONParser]

    @extend_schema(request=TranscribeRequestSerializer, summary="Transcribe base64 audio", responses=OpenApiTypes.OBJECT)
    def post(self, request):
        data = validated(TranscribeRequestSerializer, request.data)
        audio = services.audio_from_base64(data["audio_base64"])
        transcript = services.audio_transcribe(audio=audio, language=data.get("language"),
                                               phrases=data.get("phrases"))
        return Response(transcript.as_json())


class AudioSettingsView(TenantAPIView):
    @extend_schema(summary="The tenant's audio switches", responses=OpenApiTypes.OBJECT)
    def get(self, request):
        return Response(audio_settings_json(request.tenant))

    @extend_schema(request=AudioSettingsPatchSerializer, summary="Change the tenant's audio switches", responses=OpenApiTypes.OBJECT)
    def patch(self, request):
        data = validated(AudioSettingsPatchSerializer, request.data)
        tenant = services.audio_settings_update(
            tenant=request.tenant,
            recording_enabled=data.get("recordingEnabled"),
            transcription_enabled=data.get("transcriptionEnabled"),
        )
        return Response(audio_settings_json(tenant))


class SpeakView(APIView):
    content_negotiation_class = AnyAcceptNegotiation

    @extend_schema(request=SpeakRequestSerializer, responses={200: MP3_RESPONSE}, summary="Speak a text as MP3")
    def post(self, request):
        data = validated(SpeakRequestSerializer, request.data)
        rendered, _ = services.speech_render(text=data["text"], voice=data.get("voice"))
        return mp3_response(rendered)


class ModuleTranscribeView(APIView):
    # The body is the audio file itself, whatever its Content-Type; the view reads it.
    parser_classes = []

    @extend_schema(
        request={"application/octet-stream": OpenApiTypes.BINARY},
        parameters=[
            OpenApiParameter("language", str, description="Model language, ^[a-z]{2,3}$; default de."),
            OpenApiParameter("phrase", str, many=True, description="Restrict recognition to these phrases."),
        ],
        summary="Transcribe raw audio bytes",
        responses=OpenApiTypes.OBJECT,
    )
    def post(self, request):
        phrases = request.query_params.getlist("phrase")
        if any(not phrase.strip() or len(phrase) > 200 for phrase in phrases):
            raise ValidationFailed.field("phrase", "Each phrase has 1 to 200 characters.")
        transcript = services.audio_transcribe(audio=raw_audio_body(request),
                                               language=request.query_params.get("language"),
                                               phrases=[phrase.strip() for phrase in phrases])
        return Response(transcript.as_json())


class ModuleHealthView(APIView):
    @extend_schema(summary="State of the speech module's engines", responses=OpenApiTypes.OBJECT)
    def get(self, request):
        statuses = [synthesis_status(), recognition_status()]
        return Response({
            "ok": all(status.usable_now for status in statuses),
            "engines": [status.as_json() for status in statuses],
        })
