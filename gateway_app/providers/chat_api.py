"""The `api` mode of chat lanes: OpenAI-compatible chat completions over HTTP.

`chat_completion` (POST /v1/agent, /agent): `POST <endpoint>` with `{"model",
"messages", "max_tokens", "stream": false}` and, when the lane has a key,
`Authorization: Bearer <key>` (model-hub-registry §5); the answer is
`choices[0].message.content` with token counts from `usage`.

`chat_turn` (a conversation's turn, `gateway_app.services.gateway_chat`): the turn's
`messages` (system, user, assistant with its tool calls, tool), `tools`,
`tool_choice`, `temperature`, `max_tokens`, `top_p`, `stop`, `seed`, the penalties and
`response_format` as the client gave them, with `"stream":
true` when the lane streams (its registry `params.streaming`); the answer's
server-sent events (`data: {chunk}` … `data: [DONE]`) become TextDeltas as they
arrive, the tool calls' argument deltas are joined by their index, and each call is
handed over complete with its arguments parsed. A lane that answers with one JSON
object instead of a stream is read as one. vLLM, llama.cpp's server, LM Studio,
Ollama's `/v1` and the hosted APIs speak this.

An endpoint whose path ends in `/api/chat` speaks Ollama's native dialect instead
(`options.num_predict`, answer in `message.content`, counts in `prompt_eval_count`
and `eval_count`; streamed as one JSON object per line, tool calls whole with their
arguments as objects), so the registry's local Llama lane works as it is listed.
"""
import json
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from console.parsers import json_text
from gateway_app.turns import (
    MAX_TOOL_CALLS,
    TEMPLATE_TOKENS,
    LaneEnd,
    TextDelta,
    ToolCall,
    normal_finish,
    token_bound,
)
from registry_app.lanes import http
from registry_app.lanes.failover import LaneFailure


@dataclass(frozen=True)
class ChatResult:
    text: str
    input_tokens: int
    output_tokens: int


def prompt_token_bound(prompt, system=""):
    """The most tokens a chat request of `prompt` (and `system`) can be billed for
    before its answer: every byte a token, plus the template's tokens."""
    texts = [text for text in (system, prompt) if text]
    return sum(token_bound(text) for text in texts) + TEMPLATE_TOKENS * (len(texts) + 1)


def is_ollama(endpoint):
    return urlsplit(endpoint).path.rstrip("/").endswith("/api/chat")


def messages(prompt, system):
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]


def chat_completion(*, endpoint, key, model, prompt, system, max_tokens, timeout):
    ollama = is_ollama(endpoint)
    body = {"model": model, "messages": messages(prompt, system), "stream": False}
    if ollama:
        body["options"] = {"num_predict": max_tokens}
    else:
        body["max_tokens"] = max_tokens
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    answer = http.post(endpoint, body=json.dumps(body).encode(), headers=headers, timeout=timeout)
    try:
        data = json_text(answer.body)
        if ollama:
            text, usage_in, usage_out = data["message"]["content"], data.get("prompt_eval_count"), data.get("eval_count")
        else:
            usage = data.get("usage") or {}
            text = data["choices"][0]["message"]["content"]
            usage_in, usage_out = usage.get("prompt_tokens"), usage.get("completion_tokens")
    except (ValueError, KeyError, IndexError, TypeError):
        raise LaneFailure("bad_response", "not a chat-completions answer") from None
    if not isinstance(text, str) or not text.strip():
        raise LaneFailure("bad_response", "the answer has no text")
    counted = isinstance(usage_in, int) and isinstance(usage_out, int)
    # Without the provider's count, the bounds: its bill is never more than these.
    return ChatResult(
        text=text.strip(),
        input_tokens=usage_in if counted else prompt_token_bound(prompt, system or ""),
        output_tokens=usage_out if counted else min(token_bound(text), max_tokens),
    )


# --- Turns: messages, tools and streamed answers (gateway_app.turns) ---

def _ollama_messages(messages):
    """The messages in Ollama's dialect: a tool call's arguments as an object, a tool
    message with the name of the tool it answers."""
    names, spoken = {}, []
    for message in messages:
        message = dict(message)
        if message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                names[call["id"]] = call["function"]["name"]
                try:
                    arguments = json_text(call["function"]["arguments"] or "{}")
                except ValueError:
                    arguments = {}
                calls.append({"function": {"name": call["function"]["name"], "arguments": arguments}})
            message["tool_calls"] = calls
        if message["role"] == "tool" and message.get("tool_call_id") in names:
            message["tool_name"] = names[message["tool_call_id"]]
        if message.get("content") is None:
            message["content"] = ""
        spoken.append(message)
    return spoken


# OpenAI's sampling fields of a turn: Ollama's `options` call them the same.
SAMPLING_FIELDS = ("temperature", "top_p", "seed", "frequency_penalty", "presence_penalty")


def turn_body(request, *, model, stream, ollama):
    """The request body of a turn in the lane's dialect: the sampling and format fields
    the client set (none: the lane's defaults), in OpenAI's names or Ollama's
    (`options`, `format`: "json" or the JSON Schema)."""
    sampling = {name: getattr(request, name) for name in SAMPLING_FIELDS if getattr(request, name) is not None}
    if ollama:
        body = {"model": model, "messages": _ollama_messages(request.messages), "stream": stream,
                "options": {"num_predict": request.max_tokens, **sampling}}
        if request.stop:
            body["options"]["stop"] = list(request.stop)
        if request.response_format is not None:
            body["format"] = ((request.response_format.get("json_schema") or {}).get("schema") or "json"
                              if request.response_format["type"] == "json_schema" else "json")
        if request.tools and request.tool_choice != "none":
            body["tools"] = list(request.tools)
        return body
    body = {"model": model, "messages": list(request.messages), "max_tokens": request.max_tokens, "stream": stream,
            **sampling}
    if request.stop:
        body["stop"] = list(request.stop)
    if request.response_format is not None:
        body["response_format"] = dict(request.response_format)
    if request.tools:
        body["tools"] = list(request.tools)
    if request.tool_choice is not None:
        body["tool_choice"] = request.tool_choice
    return body
    body = {"model": model, "messages": list(request.messages), "max_tokens": request.max_tokens, "stream": stream}
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.tools:
        body["tools"] = list(request.tools)
    if request.tool_choice is not None:
        body["tool_choice"] = request.tool_choice
    return body


class _ToolCallParts:
    """A tool call as its deltas arrive: the id and name once, the arguments joined."""

    def __init__(self):
        self.id, self.name, self.arguments = "", "", []

    def add(self, delta):
        if not isinstance(delta, dict):
            raise LaneFailure("bad_response", "a tool call's delta is not an object")
        function = delta.get("function") or {}
        if not isinstance(function, dict):
            raise LaneFailure("bad_response", "a tool call's function is not an object")
        if isinstance(delta.get("id"), str) and delta["id"] and not self.id:
            self.id = delta["id"]
        name = function.get("name")
        if isinstance(name, str) and name and name != self.name:
            self.name += name  # a name streamed in pieces; one sent again whole is kept once
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            self.arguments.append(arguments)
        elif isinstance(arguments, dict):  # a server that sends the object itself (Ollama)
            self.arguments.append(json.dumps(arguments, ensure_ascii=False))
        elif arguments is not None:
            raise LaneFailure("bad_response", "a tool call's arguments are neither JSON text nor an object")

    def complete(self):
        return tool_call(self.id, self.name, "".join(self.arguments))


def tool_call(call_id, name, arguments_text):
    """A ToolCall from the wire: its arguments' JSON text parsed into an object."""
    if not isinstance(name, str) or not name:
        raise LaneFailure("bad_response", "a tool call without a name")
    text = arguments_text.strip() if isinstance(arguments_text, str) else ""
    try:
        arguments = json_text(text) if text else {}
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        raise LaneFailure("bad_response", f"the arguments of the tool call {name} are not a JSON object")
    return ToolCall(id=call_id or f"call_{secrets.token_hex(12)}", name=name, arguments=arguments)


class _Turn:
    """What a lane has answered so far: text, tool calls by index, finish reason, counts."""

    def __init__(self, answer):
        self.answer, self.calls, self.finish, self.usage = answer, {}, None, (None, None)

    def started(self):
        self.answer.progress()

    def openai_chunk(self, chunk):
        """The TextDeltas of one chunk of an OpenAI stream."""
        if not isinstance(chunk, dict):
            raise LaneFailure("bad_response", "a chunk of the stream is not an object")
        if chunk.get("error"):
            raise LaneFailure("server_error", f"the lane reported an error: {_error_text(chunk['error'])}")
        self._usage(chunk.get("usage"))
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise LaneFailure("bad_response", "the chunk's choices are not a list")
        for choice in choices[:1]:
            delta = (choice.get("delta") or choice.get("message") or {}) if isinstance(choice, dict) else None
            if not isinstance(delta, dict):
                raise LaneFailure("bad_response", "a choice of the stream is not an object")
            calls = delta.get("tool_calls") or []
            if not isinstance(calls, list):
                raise LaneFailure("bad_response", "the delta's tool calls are not a list")
            for position, call in enumerate(calls):
                index = call.get("index", position) if isinstance(call, dict) else position
                if isinstance(index, bool) or not isinstance(index, int):
                    raise LaneFailure("bad_response", "a tool call's index is not an integer")
                if index not in self.calls and len(self.calls) >= MAX_TOOL_CALLS:
                    raise LaneFailure("bad_response", f"more than {MAX_TOOL_CALLS} tool calls")
                self.calls.setdefault(index, _ToolCallParts()).add(call)
                self.started()
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]
                self.started()
            content = delta.get("content")
            if content is not None and not isinstance(content, str):
                raise LaneFailure("bad_response", "the delta's content is not a string")
            if content:
                self.started()
                yield TextDelta(content)

    def ollama_line(self, data):
        if not isinstance(data, dict):
            raise LaneFailure("bad_response", "a line of the stream is not an object")
        if data.get("error"):
            raise LaneFailure("server_error", f"the lane reported an error: {_error_text(data['error'])}")
        message = data.get("message") or {}
        if not isinstance(message, dict):
            raise LaneFailure("bad_response", "the line's message is not an object")
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            raise LaneFailure("bad_response", "the message's tool calls are not a list")
        for call in calls:
            if len(self.calls) >= MAX_TOOL_CALLS:
                raise LaneFailure("bad_response", f"more than {MAX_TOOL_CALLS} tool calls")
            self.calls.setdefault(len(self.calls), _ToolCallParts()).add(call)
            self.started()
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise LaneFailure("bad_response", "the message's content is not a string")
        if content:
            self.started()
            yield TextDelta(content)
        if data.get("done"):
            self.finish = data.get("done_reason") or "stop"
            self.usage = (data.get("prompt_eval_count"), data.get("eval_count"))
            self.started()

    def _usage(self, usage):
        if isinstance(usage, dict):
            self.usage = (usage.get("prompt_tokens"), usage.get("completion_tokens"))

    def end(self):
        calls = tuple(self.calls[index].complete() for index in sorted(self.calls))
        yield from calls
        counted = all(isinstance(count, int) and not isinstance(count, bool) and count >= 0 for count in self.usage)
        yield LaneEnd(normal_finish(self.finish, calls), *(self.usage if counted else (None, None)))


def _error_text(error):
    message = error.get("message") if isinstance(error, dict) else None
    return str(message if message is not None else error)[:200]


def _json(text, what):
    try:
        return json_text(text)
    except ValueError:
        raise LaneFailure("bad_response", f"{what} is not JSON") from None


def _server_sent_data(lines):
    """The data of each server-sent event of `lines` (bytes): comments (keep-alives) and
    the fields `id` and `retry` are skipped; an `error` event is the lane's failure."""
    data, event = [], ""
    for line in lines:
        if not line:
            if event == "error":
                raise LaneFailure("server_error", f"the lane reported an error: {' '.join(data)[:200]}")
            if data:
                yield "\n".join(data)
            data, event = [], ""
            continue
        if line.startswith(b":"):
            continue
        name, _, value = line.partition(b":")
        value = value[1:] if value.startswith(b" ") else value
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            raise LaneFailure("bad_response", "the stream is not UTF-8") from None
        if name == b"data":
            data.append(text)
        elif name == b"event":
            event = text
        elif name not in (b"id", b"retry"):
            raise LaneFailure("bad_response", "the stream is not server-sent events")
    if data:
        yield "\n".join(data)


def _openai_stream(turn, answer):
    done = False
    for data in _server_sent_data(answer.lines()):
        if data.strip() == "[DONE]":
            done = True
            break
        yield from turn.openai_chunk(_json(data, "an event of the stream"))
    if not done and turn.finish is None:
        raise LaneFailure("connection_error", "the stream ended before the answer did")


def _ollama_stream(turn, answer):
    for line in answer.lines():
        if line.strip():
            yield from turn.ollama_line(_json(line, "a line of the stream"))
            if turn.finish is not None:
                return
    raise LaneFailure("connection_error", "the stream ended before the answer did")


def _whole_answer(turn, answer, *, ollama):
    """An answer that is no stream (the lane's `streaming` is false, or it ignored the
    request to stream): one JSON object."""
    data = _json(answer.read_all(), "the answer")
    if ollama:
        yield from turn.ollama_line({**data, "done": True} if isinstance(data, dict) else data)
        return
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
        raise LaneFailure("bad_response", "not a chat-completions answer")
    message = data["choices"][0].get("message") if isinstance(data["choices"][0], dict) else None
    if not isinstance(message, dict):
        raise LaneFailure("bad_response", "not a chat-completions answer")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list) or len(calls) > MAX_TOOL_CALLS:
        raise LaneFailure("bad_response", f"the answer's tool calls are not a list of at most {MAX_TOOL_CALLS}")
    for index, call in enumerate(calls):
        turn.calls[index] = _ToolCallParts()
        turn.calls[index].add(call)
    turn.finish = data["choices"][0].get("finish_reason") or "stop"
    turn._usage(data.get("usage"))
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise LaneFailure("bad_response", "the answer's content is not a string")
    if content:
        yield TextDelta(content)


def chat_turn(*, endpoint, key, model, request, stream, connect_timeout, first_by, ends_by, idle_sec, cancel=None):
    """The events of one lane's answer to a turn: TextDeltas as they arrive, then the
    ToolCalls (complete), then a LaneEnd. Every failure is a LaneFailure: a refused or
    failed request, no first token by `first_by`, a stall of `idle_sec`, no end by
    `ends_by` (monotonic times), an answer over 1 MB, a stream that is not one or
    breaks off, a tool call whose arguments are no JSON object. `cancel` (an
    http.Cancel) stops it from another thread."""
    ollama = is_ollama(endpoint)
    body = json.dumps(turn_body(request, model=model, stream=stream, ollama=ollama), ensure_ascii=False).encode()
    headers = {"Content-Type": "application/json",
               "Accept": ("application/x-ndjson" if ollama else "text/event-stream") if stream else "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    answer = http.post_stream(endpoint, body=body, headers=headers, connect_timeout=connect_timeout,
                              first_by=first_by, ends_by=ends_by, idle_sec=idle_sec, cancel=cancel)
    try:
        turn = _Turn(answer)
        if not stream or answer.content_type == "application/json":
            yield from _whole_answer(turn, answer, ollama=ollama)
        elif ollama:
            yield from _ollama_stream(turn, answer)
        else:
            yield from _openai_stream(turn, answer)
        yield from turn.end()
    finally:
        answer.close()
