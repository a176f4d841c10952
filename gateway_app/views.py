"""The gateway paths (/v1/…) and the cloud agent (/agent): thin views over the services.

All of them need `Authorization: Bearer <GATEWAY_STATIC_TOKEN>` and nothing else
opens them (docs/api.md); /v1/ready also answers probe_registry's probe credential.
"""
import io
import json

from django.core.handlers.wsgi import LimitedStream
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from console.api import ApiView, accepts_query, validated
from console.errors import ValidationFailed
from console.openapi import errors
from console.parsers import JSONParser, read_bounded
from gateway_app import selectors, services
from gateway_app.auth import WWW_AUTHENTICATE, GatewayTokenAuthentication
from gateway_app.errors import LengthRequired, NotReady
from gateway_app.roles import role_named
from gateway_app.serializers import (
    AgentRequestSerializer,
    GatewaySpeakSerializer,
    GatewayTranscribeQuerySerializer,
    LaneUsageSerializer,
    RoleRequestSerializer,
    UsageQuerySerializer,
)
from registry_app.probe_auth import ProbeAuthentication
from speech_app.decode import MAX_AUDIO_BYTES
from speech_app.http import MP3_RESPONSE, AnyAcceptNegotiation, audio_too_large, mp3_response, raw_audio_body

# The bodies of the JSON paths (a prompt of 20,000 characters is at most 80 KB of UTF-8).
MAX_BODY_BYTES = 256 * 1024


class AnyTypeJSONParser(JSONParser):
    """The project's JSON reader (console.parsers: bounded size and depth, no NaN or
    Infinity, NUL and lone surrogates refused by path) for a body of any Content-Type:
    the hub's integration paths are called by scripts, often as `curl -d '{…}'`, which
    labels the body as a form (model-hub-registry §4). At most 256 KB, refused unread."""

    media_type = "*/*"
    limit = MAX_BODY_BYTES


def is_chunked_without_length(meta):
    return "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower() and not meta.get("CONTENT_LENGTH")


def read_chunked_body(django_request, limit, too_large):
    """Makes a body sent with `Transfer-Encoding: chunked` readable like any other.

    Such a request has no Content-Length, and Django reads its body as empty. A server
    that decodes the chunks says so with `wsgi.input_terminated` (gunicorn does): the
    body is then read from wsgi.input up to `limit` (+ 1 byte, to know it is longer:
    `too_large`) and stands in for the request's stream with its length. Any other
    server hands over the raw stream, which cannot be read safely: 411."""
    meta = django_request.META
    if not is_chunked_without_length(meta):
        return
    if not meta.get("wsgi.input_terminated"):
        raise LengthRequired()
    body = read_bounded(meta["wsgi.input"], 0, limit, too_large)
    meta["CONTENT_LENGTH"] = str(len(body))
    django_request._stream = LimitedStream(io.BytesIO(body), len(body))


class GatewayAPIView(ApiView):
    authentication_classes = [GatewayTokenAuthentication]
    parser_classes = [AnyTypeJSONParser]
    # The largest body a view reads, and its 413 (a chunked body is held to it too).
    body_limit = MAX_BODY_BYTES
    body_too_large = staticmethod(JSONParser.too_large)

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        # After authentication: an unauthenticated request's body is never read.
        read_chunked_body(request._request, self.body_limit, self.body_too_large)

    def handle_exception(self, exc):
        # The project's exception handler writes the API's realm on every 401; the
        # gateway's token is no API key, and its 401s name the gateway's realm, also on
        # /v1/ready, whose first authentication is the probe credential's.
        response = super().handle_exception(exc)
        if response.status_code == 401:
            response["WWW-Authenticate"] = WWW_AUTHENTICATE
        return response


def chat_answer_json(answer):
    return {"text": answer.result.text, **answer.as_json()}


class AgentView(GatewayAPIView):
    @extend_schema(request=AgentRequestSerializer, responses=OpenApiTypes.OBJECT,
                   extensions=errors(422, 502),
                   summary="Answer a prompt through the registry's chat lanes, with failover")
    def post(self, request):
        data = validated(AgentRequestSerializer, request.data)
        answer = services.gateway_agent_answer(**data)
        return Response(chat_answer_json(answer))


class ReadyView(GatewayAPIView):
    authentication_classes = [ProbeAuthentication, GatewayTokenAuthentication]

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Gateway mode, usable lanes and cooldowns")
    def get(self, request):
        readiness = selectors.gateway_readiness()
        if not readiness["ready"]:
            raise NotReady(details=readiness)
        return Response(readiness)


class UsageView(GatewayAPIView):
    @accepts_query(UsageQuerySerializer)
    @extend_schema(responses=OpenApiTypes.OBJECT,
                   summary="Usage of the gateway's lanes per UTC day")
    def get(self, request):
        query = validated(UsageQuerySerializer, request.query_params.dict())
        rows, totals = selectors.usage_between(**query)
        return Response({"from": query["first_day"], "to": query["last_day"],
                         "usage": LaneUsageSerializer(rows, many=True).data,
                         "totals": {**totals, "eur": float(totals["eur"])}})


class CloudAgentView(GatewayAPIView):
    @extend_schema(request=RoleRequestSerializer, responses=OpenApiTypes.OBJECT,
                   extensions=errors(422, 502),
                   summary="Answer a prompt in a role (trainee, junior, senior, experte)")
    def post(self, request):
        # The role first: an unknown role answers with the list of roles, whatever else is wrong.
        role = request.data.get("role") if isinstance(request.data, dict) else None
        role_named(role)
        data = validated(RoleRequestSerializer, request.data)
        del data["role"]
        answer = services.gateway_role_answer(role=role, **data)
        return Response({"role": role, **chat_answer_json(answer), "fallback": answer.fallback})


class SpeakView(GatewayAPIView):
    content_negotiation_class = AnyAcceptNegotiation

    @extend_schema(request=GatewaySpeakSerializer, responses=MP3_RESPONSE,
                   extensions=errors(422, 502),
                   summary="Speak a text as MP3 through the registry's tts lanes, local engines first")
    def post(self, request):
        data = validated(GatewaySpeakSerializer, request.data)
        answer = services.gateway_speak(**data)
        response = mp3_response(answer.result)
        response["X-Gateway-Lane"] = answer.lane
        response["X-Gateway-Mode"] = answer.mode
        response["X-Gateway-Cost-Eur"] = f"{answer.cost_eur:.6f}"
        # ASCII JSON: a header carries Latin-1 at most.
        response["X-Gateway-Attempts"] = json.dumps([attempt.as_json() for attempt in answer.attempts],
                                                    separators=(",", ":"))
        return response


class TranscribeView(GatewayAPIView):
    parser_classes = []  # the body is the audio itself, whatever its Content-Type
    body_limit = MAX_AUDIO_BYTES
    body_too_large = staticmethod(audio_too_large)

    @accepts_query(GatewayTranscribeQuerySerializer)
    @extend_schema(request={"application/octet-stream": OpenApiTypes.BINARY},
                   responses=OpenApiTypes.OBJECT,
                   extensions=errors(422, 502),
                   summary="Transcribe raw audio through the registry's stt lanes, local engines first")
    def post(self, request):
        query = validated(GatewayTranscribeQuerySerializer, request.query_params.dict())
        phrases = request.query_params.getlist("phrase")
        if any(not phrase.strip() or len(phrase) > 200 for phrase in phrases) or len(phrases) > 500:
            raise ValidationFailed.field("phrase", "At most 500 phrases of 1 to 200 characters each.")
        answer = services.gateway_transcribe(audio=raw_audio_body(request),
                                             phrases=[phrase.strip() for phrase in phrases], **query)
        return Response({**answer.result.as_json(), **answer.as_json()})
