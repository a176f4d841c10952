"""OpenAI's models and audio paths on the gateway (docs/api.md, "OpenAI-compatible"):
`GET /v1/models`, `GET /v1/models/{id}`, `POST /v1/audio/transcriptions` (multipart)
and `POST /v1/audio/speech`, with the gateway's token like every /v1 path. The chat
path is gateway_app.views.ChatCompletionsView."""
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from console.api import validated
from console.openapi import errors
from gateway_app import services
from gateway_app.model_names import SPEECH_MODELS, TRANSCRIPTION_MODELS, model_list, model_named, speech_model
from gateway_app.openai_serializers import (
    OPENAI_VOICES,
    ModelListSerializer,
    ModelSerializer,
    SpeechRequestSerializer,
    TranscriptionRequestSerializer,
)
from gateway_app.transcript_formats import transcript_in_format
from gateway_app.views import GatewayAPIView, with_answer_headers
from speech_app.formats import SPEECH_FORMATS, speech_in_format
from speech_app.http import AnyAcceptNegotiation, AudioMultipartParser, audio_too_large, uploaded_audio


class ModelsView(GatewayAPIView):
    @extend_schema(responses=ModelListSerializer,
                   summary="The models (OpenAI-compatible): auto and every callable chat and code lane")
    def get(self, request):
        return Response({"object": "list", "data": model_list()})


class ModelView(GatewayAPIView):
    @extend_schema(responses=ModelSerializer, extensions=errors(404),
                   summary="One model (OpenAI-compatible): auto, a lane, or a name that stands for one")
    def get(self, request, model):
        return Response(model_named(model))


class AudioTranscriptionsView(GatewayAPIView):
    parser_classes = [AudioMultipartParser]
    body_limit = AudioMultipartParser.limit
    body_too_large = staticmethod(audio_too_large)
    content_negotiation_class = AnyAcceptNegotiation

    @extend_schema(request={"multipart/form-data": TranscriptionRequestSerializer},
                   responses={(200, "application/json"): OpenApiTypes.OBJECT,
                              (200, "text/plain"): OpenApiTypes.STR, (200, "application/x-subrip"): OpenApiTypes.STR,
                              (200, "text/vtt"): OpenApiTypes.STR},
                   extensions=errors(404, 422, 502),
                   summary="Transcribe an uploaded audio file (OpenAI-compatible) through the registry's stt lanes")
    def post(self, request):
        data = validated(TranscriptionRequestSerializer, request.data)
        lane = speech_model(data["model"], TRANSCRIPTION_MODELS, "stt")
        answer = services.gateway_transcribe(audio=uploaded_audio(data["file"]), language=data.get("language"),
                                             max_eur=data.get("max_eur"), lane=lane)
        words = "word" in data.get("timestamp_granularities[]", ())
        body, content_type = transcript_in_format(answer.result, data["response_format"], words=words)
        response = (Response(body) if isinstance(body, dict)
                    else HttpResponse(body, content_type=f"{content_type}; charset=utf-8"))
        return with_answer_headers(response, answer)


class AudioSpeechView(GatewayAPIView):
    content_negotiation_class = AnyAcceptNegotiation

    @extend_schema(request=SpeechRequestSerializer,
                   responses={(200, spec.content_type): OpenApiResponse(OpenApiTypes.BINARY,
                                                                        description=f"The speech as {name}.")
                              for name, spec in SPEECH_FORMATS.items()},
                   extensions=errors(404, 422, 502),
                   summary="Speak a text (OpenAI-compatible) through the registry's tts lanes, local engines first")
    def post(self, request):
        data = validated(SpeechRequestSerializer, request.data)
        lane = speech_model(data["model"], SPEECH_MODELS, "tts")
        voice = None if data["voice"] in OPENAI_VOICES else data["voice"]
        answer = services.gateway_speak(text=data["input"], voice=voice, language=data.get("language"),
                                        max_eur=data.get("max_eur"), lane=lane)
        audio = speech_in_format(answer.result.mp3, response_format=data["response_format"], speed=data["speed"])
        response = HttpResponse(audio, content_type=SPEECH_FORMATS[data["response_format"]].content_type)
        response["Content-Length"] = str(len(audio))
        return with_answer_headers(response, answer)
