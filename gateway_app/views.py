"""The gateway paths (/v1/…) and the cloud agent (/agent): thin views over the services.

All of them need `Authorization: Bearer <GATEWAY_STATIC_TOKEN>` and nothing else
opens them (docs/api.md); /v1/ready also answers probe_registry's probe credential.
"""
import io
import json
import logging
import secrets
import time

from django.core.handlers.wsgi import LimitedStream
from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.response import Response

from console.api import ApiView, accepts_query, validated
from console.errors import ApiError, ValidationFailed
from console.openapi import errors
from console.parsers import JSONParser, read_bounded
from gateway_app import selectors, services
from gateway_app.auth import WWW_AUTHENTICATE, GatewayTokenAuthentication
from gateway_app.errors import LengthRequired, NotReady
from gateway_app.model_names import chat_model
from gateway_app.providers.chat_api import SAMPLING_FIELDS
from gateway_app.roles import role_named
from gateway_app.serializers import (
    CHAT_COMPLETION_ANSWERS,
    AgentRequestSerializer,
    AudioFileSerializer,
    ChatCompletionChunkSerializer,
    ChatCompletionRequestSerializer,
    ChatCompletionSerializer,
    GatewaySpeakSerializer,
    GatewayTranscribeQuerySerializer,
    LaneUsageSerializer,
    RoleRequestSerializer,
    UsageQuerySerializer,
)
from gateway_app.turns import ChatDone, TextDelta, ToolCall
from registry_app.probe_auth import ProbeAuthentication
from speech_app.decode import MAX_AUDIO_BYTES
from speech_app.http import (
    MP3_RESPONSE,
    AnyAcceptNegotiation,
    AudioMultipartParser,
    audio_too_large,
    mp3_response,
    raw_audio_body,
    uploaded_audio,
)

logger = logging.getLogger("gateway_app")

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


def with_answer_headers(response: HttpResponse, answer: services.GatewayAnswer) -> HttpResponse:
    """`response` with the X-Gateway-* headers of a GatewayAnswer: the lane, its mode,
    the cost and every attempt."""
    response["X-Gateway-Lane"] = answer.lane
    response["X-Gateway-Mode"] = answer.mode
    response["X-Gateway-Cost-Eur"] = f"{answer.cost_eur:.6f}"
    # ASCII JSON: a header carries Latin-1 at most.
    response["X-Gateway-Attempts"] = json.dumps([attempt.as_json() for attempt in answer.attempts],
                                                separators=(",", ":"))
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
        return with_answer_headers(mp3_response(answer.result), answer)


class TranscribeView(GatewayAPIView):
    # The body is the audio itself, whatever its Content-Type, or a multipart form whose `file` it is.
    parser_classes = [AudioMultipartParser]
    body_too_large = staticmethod(audio_too_large)

    @property
    def body_limit(self):
        """The audio limit; a form gets room for its envelope around the file."""
        return AudioMultipartParser.limit if self._multipart() else MAX_AUDIO_BYTES

    def _multipart(self):
        return self.request.content_type.startswith(AudioMultipartParser.media_type)

    @accepts_query(GatewayTranscribeQuerySerializer)
    @extend_schema(request={"application/octet-stream": OpenApiTypes.BINARY,
                            "multipart/form-data": AudioFileSerializer},
                   responses=OpenApiTypes.OBJECT,
                   extensions=errors(422, 502),
                   summary="Transcribe raw audio through the registry's stt lanes, local engines first")
    def post(self, request):
        query = validated(GatewayTranscribeQuerySerializer, request.query_params.dict())
        phrases = request.query_params.getlist("phrase")
        if any(not phrase.strip() or len(phrase) > 200 for phrase in phrases) or len(phrases) > 500:
            raise ValidationFailed.field("phrase", "At most 500 phrases of 1 to 200 characters each.")
        if self._multipart():
            audio = uploaded_audio(validated(AudioFileSerializer, request.data)["file"])
        else:
            audio = raw_audio_body(request)
        answer = services.gateway_transcribe(audio=audio, phrases=[phrase.strip() for phrase in phrases], **query)
        return Response({**answer.result.as_json(), **answer.as_json()})


# --- POST /v1/chat/completions: the hub as an OpenAI-compatible chat endpoint ---

def _completion_id():
    return f"chatcmpl-{secrets.token_hex(12)}"


def _gateway_headers(response, stream):
    response["X-Gateway-Lane"] = stream.lane
    response["X-Gateway-Mode"] = stream.mode
    # ASCII JSON: a header carries Latin-1 at most.
    response["X-Gateway-Attempts"] = json.dumps([attempt.as_json() for attempt in stream.attempts],
                                                separators=(",", ":"))


def _usage(done):
    return {"prompt_tokens": done.input_tokens, "completion_tokens": done.output_tokens,
            "total_tokens": done.input_tokens + done.output_tokens}


def _sse(data):
    return b"data: " + json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


_EXAMPLE_HEAD = '"id":"chatcmpl-1b2c","object":"chat.completion.chunk","created":1795000000,"model":"chat-a"'
STREAM_EXAMPLE = "".join(f"data: {{{_EXAMPLE_HEAD},{rest}}}\n\n" for rest in (
    '"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]',
    '"choices":[{"index":0,"delta":{"content":"Gern, "},"finish_reason":null}]',
    '"choices":[{"index":0,"delta":{"content":"wir rufen Sie zurück."},"finish_reason":null}]',
    '"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]',
    '"choices":[],"usage":{"prompt_tokens":42,"completion_tokens":9,"total_tokens":51}',
)) + "data: [DONE]\n\n"


def completion_events(stream, *, include_usage):
    """The turn's events as `chat.completion.chunk` server-sent events, ending with
    `data: [DONE]`; a lane that fails mid-answer ends the stream with one `error`
    event in the API's error shape (OpenAI's clients raise it) and no [DONE]."""
    head = {"id": _completion_id(), "object": "chat.completion.chunk", "created": int(time.time()),
            "model": stream.lane}

    def chunk(delta, finish_reason=None):
        return _sse({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})

    try:
        yield chunk({"role": "assistant", "content": ""})
        calls = 0
        for event in stream:
            if isinstance(event, TextDelta):
                yield chunk({"content": event.text})
            elif isinstance(event, ToolCall):
                yield chunk({"tool_calls": [{"index": calls, **event.as_wire()}]})
                calls += 1
            elif isinstance(event, ChatDone):
                yield chunk({}, event.finish_reason)
                if include_usage:
                    yield _sse({**head, "choices": [], "usage": _usage(event)})
        yield b"data: [DONE]\n\n"
    except ApiError as error:
        yield _sse({"error": {"code": error.code, "message": error.message, "details": error.details}})
    except Exception:  # the answer has begun: the client gets an error event, not a cut-off stream
        logger.exception("the chat completion stream of lane %s failed", stream.lane)
        yield _sse({"error": {"code": "internal_error", "message": "The answer failed on the gateway.",
                              "details": {}}})
    finally:
        stream.close()


def completion_json(stream):
    """The `chat.completion` object of a turn read whole."""
    done = next(event for event in stream if isinstance(event, ChatDone))
    message = {"role": "assistant", "content": done.text or None}
    if done.tool_calls:
        message["tool_calls"] = [call.as_wire() for call in done.tool_calls]
    return {"id": _completion_id(), "object": "chat.completion", "created": int(time.time()), "model": done.lane,
            "choices": [{"index": 0, "message": message, "finish_reason": done.finish_reason}],
            "usage": _usage(done)}, done


class ChatCompletionsView(GatewayAPIView):
    # OpenAI's clients ask for JSON even when they stream; a stream is answered as one
    # whatever Accept says, and errors are JSON.
    content_negotiation_class = AnyAcceptNegotiation

    @extend_schema(
        request=ChatCompletionRequestSerializer,
        responses={(200, "application/json"): OpenApiResponse(ChatCompletionSerializer,
                                                              description=CHAT_COMPLETION_ANSWERS),
                   (200, "text/event-stream"): OpenApiResponse(ChatCompletionChunkSerializer,
                                                               description=CHAT_COMPLETION_ANSWERS, examples=[
                       OpenApiExample("A streamed answer", response_only=True, media_type="text/event-stream",
                                      value=STREAM_EXAMPLE)])},
        extensions=errors(404, 422),
        examples=[OpenApiExample("A turn with a tool", request_only=True, media_type="application/json", value={
            "model": "auto",
            "messages": [{"role": "system", "content": "Du bist die Telefonassistenz der Praxis Dr. Weber."},
                         {"role": "user", "content": "Bitte rufen Sie mich morgen Vormittag zurück."}],
            "tools": [{"type": "function", "function": {
                "name": "create_callback", "description": "Legt einen Rückrufwunsch an.",
                "parameters": {"type": "object", "properties": {"when": {"type": "string"}}}}}],
            "stream": True})],
        summary="Chat completions (OpenAI-compatible): messages and tools through the registry's lanes, "
                "streamed or whole")
    def post(self, request):
        data = validated(ChatCompletionRequestSerializer, request.data)
        model = chat_model(data["model"])
        limits = [value for value in (data.get("max_tokens"), data.get("max_completion_tokens")) if value]
        sampling = {name: data[name] for name in SAMPLING_FIELDS if data.get(name) is not None}
        stream = services.gateway_chat(
            messages=data["messages"], tools=data.get("tools"), tool_choice=data.get("tool_choice"),
            lane=model.lane.id if model.lane is not None else None, capability=model.capability,
            language=data.get("language"), max_tokens=min(limits) if limits else None, max_eur=data.get("max_eur"),
            stream=data["stream"], stop=data.get("stop") or (), response_format=data.get("response_format"),
            **sampling)
        if data["stream"]:
            include_usage = (data.get("stream_options") or {}).get("include_usage", False)
            response = StreamingHttpResponse(completion_events(stream, include_usage=include_usage),
                                             content_type="text/event-stream; charset=utf-8")
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"  # a proxy in front passes each event on at once
            _gateway_headers(response, stream)
            return response
        body, done = completion_json(stream)
        response = Response(body)
        _gateway_headers(response, stream)
        response["X-Gateway-Cost-Eur"] = f"{done.cost_eur:.6f}"
        return response

