"""A fake OpenAI-compatible chat server on loopback, speaking the real wire format.

`POST /v1/chat/completions` answers as vLLM, llama.cpp's server or a hosted API do:
with `"stream": true` server-sent events over HTTP/1.1 chunked transfer encoding
(`data: {chat.completion.chunk}` lines, a first chunk with the role, the text in
pieces, each tool call's id and name and then its arguments in several deltas by
index, a chunk with the finish reason, one with `usage`, `data: [DONE]`), else one
`chat.completion` object. What it answers is a `Reply` (or a list of them, one per
request, the last one repeated; or a function of the request's body), so a test can
make it fail (a status), stall before its first token or mid-answer until released, stream slowly
(the benchmark's model), break off, or send malformed events. It keeps every request.

Used by the gateway's tests (tests/gateway_app/), its benchmark (bench/bench_chat.py)
and whoever drives conversations through a real lane.
"""
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class FakeToolCall:
    id: str
    name: str
    arguments: str  # JSON text, sent in `pieces` deltas
    pieces: int = 3


@dataclass
class Reply:
    text: str = ""
    pieces: list[str] | None = None  # the text's pieces as sent (default: word by word)
    tool_calls: list[FakeToolCall] = field(default_factory=list)
    finish_reason: str | None = None  # default: tool_calls when there are some, else stop
    usage: tuple[int, int] | None = (11, 7)  # (prompt_tokens, completion_tokens), or None for no usage
    status: int = 200
    body: bytes | None = None  # a body sent as it is (JSON), with `status`
    headers: dict[str, str] = field(default_factory=dict)
    stream: bool | None = None  # None: as the request asks
    hold: threading.Event | None = None  # waits for it (at most 10 s) before the first token
    first_token_delay: float = 0.0  # seconds before the first token (a slow model)
    tokens_per_second: float = 0.0  # pace of the pieces after it (0: at once)
    raw_lines: list[bytes] | None = None  # bytes lines sent instead of the events (malformed streams)
    break_after: int | None = None  # the connection is dropped after this many events, without an end
    stall_after: int | None = None  # after this many events, waits for `stall` (at most 10 s) with the connection open
    stall: threading.Event | None = None
    done: bool = True  # ends with `data: [DONE]`

    def whole_text(self):
        return "".join(self.text_pieces())

    def text_pieces(self):
        if self.pieces is not None:
            return list(self.pieces)
        words = self.text.split(" ")
        return [word + (" " if index < len(words) - 1 else "") for index, word in enumerate(words) if word or index]


def _split(text, pieces):
    size = max(1, -(-len(text) // pieces))
    return [text[start:start + size] for start in range(0, len(text), size)] or [""]


def _chunk(delta, finish_reason=None, model="fake-model"):
    return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}


def stream_events(reply):
    """The chunks of `reply` as a stream: dicts, in order (without [DONE])."""
    events = [_chunk({"role": "assistant", "content": ""})]
    events += [_chunk({"content": piece}) for piece in reply.text_pieces() if piece]
    for index, call in enumerate(reply.tool_calls):
        events.append(_chunk({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                              "function": {"name": call.name, "arguments": ""}}]}))
        events += [_chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                   for piece in _split(call.arguments, call.pieces)]
    events.append(_chunk({}, reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")))
    if reply.usage:
        events.append({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_700_000_000,
                       "model": "fake-model", "choices": [],
                       "usage": {"prompt_tokens": reply.usage[0], "completion_tokens": reply.usage[1],
                                 "total_tokens": sum(reply.usage)}})
    return events


def completion(reply):
    message = {"role": "assistant", "content": reply.whole_text() or None}
    if reply.tool_calls:
        message["tool_calls"] = [{"id": call.id, "type": "function",
                                  "function": {"name": call.name, "arguments": call.arguments}}
                                 for call in reply.tool_calls]
    body = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1_700_000_000, "model": "fake-model",
            "choices": [{"index": 0, "message": message,
                         "finish_reason": reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")}]}
    if reply.usage:
        body["usage"] = {"prompt_tokens": reply.usage[0], "completion_tokens": reply.usage[1],
                         "total_tokens": sum(reply.usage)}
    return body


def ollama_lines(reply):
    """`reply` in Ollama's native dialect (POST /api/chat): one JSON object per line, tool
    calls whole with their arguments as objects, the counts on the last line."""
    def line(message, done=False, **extra):
        return {"model": "fake-model", "created_at": "2026-11-25T10:00:00Z",
                "message": {"role": "assistant", "content": "", **message}, "done": done, **extra}
    lines = [line({"content": piece}) for piece in reply.text_pieces() if piece]
    if reply.tool_calls:
        lines.append(line({"tool_calls": [{"function": {"name": call.name, "arguments": json.loads(call.arguments)}}
                                          for call in reply.tool_calls]}))
    counts = {"prompt_eval_count": reply.usage[0], "eval_count": reply.usage[1]} if reply.usage else {}
    lines.append(line({}, True, done_reason=reply.finish_reason or "stop", **counts))
    return lines


def ollama_whole(reply):
    """`reply` in Ollama's dialect with `"stream": false`: one object, the last line's with the whole message."""
    lines = ollama_lines(reply)
    message = {"role": "assistant", "content": reply.whole_text()}
    if reply.tool_calls:
        message["tool_calls"] = lines[-2]["message"]["tool_calls"]
    return {**lines[-1], "message": message}


class FakeChatServer:
    """`dialect` "openai" (POST /v1/chat/completions) or "ollama" (POST /api/chat)."""

    def __init__(self, replies, dialect="openai"):
        self.replies, self.dialect = replies, dialect
        self.requests = []  # (path, headers, parsed body)
        self.holds = []
        self._served = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    parsed = json.loads(body)
                except ValueError:
                    parsed = body
                fake.serve(self, parsed)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def url(self):
        path = "/api/chat" if self.dialect == "ollama" else "/v1/chat/completions"
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    @property
    def bodies(self):
        return [body for _, _, body in self.requests]

    def reply_to(self, body):
        with self._lock:
            self._served += 1
            served = self._served
        if callable(self.replies):
            return self.replies(body)
        if isinstance(self.replies, list):
            return self.replies[min(served, len(self.replies)) - 1]
        return self.replies

    def serve(self, handler, body):
        self.requests.append((handler.path, dict(handler.headers), body))
        reply = self.reply_to(body)
        try:
            if reply.status != 200 or reply.body is not None:
                self._plain(handler, reply.status, reply.body or b'{"error": {"message": "failed"}}', reply.headers)
                return
            # Ollama streams unless told not to; OpenAI's servers only when asked.
            asked = body.get("stream", self.dialect == "ollama") if isinstance(body, dict) else False
            streamed = reply.stream if reply.stream is not None else bool(asked)
            if not streamed:
                self._wait(reply)
                whole = ollama_whole(reply) if self.dialect == "ollama" else completion(reply)
                self._plain(handler, 200, json.dumps(whole).encode(), reply.headers)
                return
            handler.send_response(200)
            handler.send_header("Content-Type", "application/x-ndjson" if self.dialect == "ollama"
                                else "text/event-stream")
            handler.send_header("Cache-Control", "no-cache")
            handler.send_header("Transfer-Encoding", "chunked")
            handler.send_header("Connection", "close")
            for name, value in reply.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            self._stream(handler, reply)
        except OSError:
            pass  # the gateway stopped reading (a timeout, a closed stream)
        finally:
            handler.close_connection = True

    def _wait(self, reply):
        if reply.hold is not None:
            self.holds.append(reply.hold)
            reply.hold.wait(10)
        if reply.first_token_delay:
            time.sleep(reply.first_token_delay)  # the simulated model's thinking, not a synchronisation

    @staticmethod
    def _plain(handler, status, body, headers):
        handler.send_response(status)
        handler.send_header("Content-Type", headers.get("Content-Type", "application/json"))
        for name, value in headers.items():
            if name != "Content-Type":
                handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(body)

    @staticmethod
    def _send(handler, data):
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        handler.wfile.flush()

    def _stream(self, handler, reply):
        # The role chunk goes out at once, as real servers send it; the first token waits.
        if reply.raw_lines is not None:
            lines = [line + b"\n" for line in reply.raw_lines]
        elif self.dialect == "ollama":
            lines = [json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in ollama_lines(reply)]
        else:
            lines = [b"data: " + json.dumps(event, ensure_ascii=False).encode() + b"\n\n"
                     for event in stream_events(reply)]
            if reply.done:
                lines.append(b"data: [DONE]\n\n")
        for number, line in enumerate(lines):
            if number == 1:
                self._wait(reply)
            elif number > 1 and reply.tokens_per_second:
                time.sleep(1 / reply.tokens_per_second)  # the simulated model's pace
            if reply.break_after is not None and number >= reply.break_after:
                return  # dropped: no terminating chunk, the connection closes
            if reply.stall_after is not None and number == reply.stall_after:
                self.holds.append(reply.stall)
                reply.stall.wait(10)
            self._send(handler, line)
        handler.wfile.write(b"0\r\n\r\n")

    def stop(self):
        for hold in self.holds:
            hold.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
