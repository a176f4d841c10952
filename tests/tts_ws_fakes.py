"""Fake ElevenLabs and Cartesia text-to-speech WebSocket servers on loopback, speaking
the vendors' wire formats (checked with the vendors' own SDKs as clients:
tests/speech_app/test_tts_websockets.py).

FakeElevenLabs serves `/v1/text-to-speech/{voice_id}/stream-input?model_id=…&output_format=…`
with `xi-api-key` (a wrong key: HTTP 401 at the handshake, as the API refuses it). It reads
the input messages — `{"text": " ", …}` first, text pieces ending in a space,
`"flush": true`, `{"text": ""}` for the end — and answers each flushed (or ended) piece
of text with `chunks` messages `{"audio": "<base64>", "isFinal": null,
"normalizedAlignment": …}`, then `{"isFinal": true}` and closes.

FakeCartesia serves `/tts/websocket` with `Authorization: Bearer <key>` or `X-API-Key`
and a `Cartesia-Version`; it reads generation requests (`context_id`, `model_id`,
`transcript`, `voice` {mode id}, `output_format` raw with an encoding and rate it
knows, `continue`, `flush`) and, as Cartesia buffers a context's text that is to be
continued, speaks a context's text only when it is flushed (`flush: true`: then
`{"type": "flush_done", "flush_id"}`, flush ids counting from 1 per context) or whole
(`continue: false`: then `{"type": "done"}`): `chunks` `{"type": "chunk", "data": …,
"flush_id"}` messages of its context. `{"context_id", "cancel": true}` stops the
context's audio. Bad requests get `{"type": "error", "status_code": 400}`.

Both make audio of a known byte per format (so a test sees it went unconverted or was
transcoded), record every connection (path, query, headers, messages) and whether the
client went away before the answer was whole; `hold` (an Event) keeps all but the
first chunk back until set (a barge-in arrives while audio is still being made).
"""
import base64
import contextlib
import json
import queue
import threading
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.sync.server import Server, ServerConnection, serve

ELEVENLABS_UNITS = {"pcm_16000": b"\x02\x00", "pcm_8000": b"\x02\x00", "pcm_24000": b"\x02\x00", "ulaw_8000": b"\xff"}
CARTESIA_UNITS = {"pcm_s16le": b"\x03\x00", "pcm_alaw": b"\xd5", "pcm_mulaw": b"\xff"}
CARTESIA_RATES = {8000, 16000, 22050, 24000, 44100, 48000}


@dataclass
class Connection:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    messages: list[dict] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)  # Cartesia: the contexts cancelled
    hung_up: bool = False  # the client closed before the answer was whole
    closed: threading.Event = field(default_factory=threading.Event)

    def param(self, name: str) -> str:
        return self.query.get(name, [""])[0]

    @property
    def texts(self) -> list[str]:
        return [str(m.get("text", m.get("transcript", ""))) for m in self.messages]


class _Fake:
    path_ok: str = ""

    def __init__(self, *, key: str, chunks: int = 3, chunk_bytes: int = 1600,
                 hold: threading.Event | None = None) -> None:
        self.key, self.chunks, self.chunk_bytes, self.hold = key, chunks, chunk_bytes, hold
        self.connections: list[Connection] = []
        self._server: Server | None = None

    def __enter__(self) -> "_Fake":
        self._server = serve(self._handle, "127.0.0.1", 0, process_request=self._check)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.hold is not None:
            self.hold.set()
        if self._server is not None:
            self._server.shutdown()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"ws://127.0.0.1:{self._server.socket.getsockname()[1]}"

    def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        raise NotImplementedError

    def _handle(self, socket: ServerConnection) -> None:
        raise NotImplementedError

    def _record(self, socket: ServerConnection) -> Connection:
        request = socket.request
        assert request is not None
        parts = urlsplit(request.path)
        record = Connection(path=parts.path, query=parse_qs(parts.query),
                            headers={name.lower(): value for name, value in request.headers.raw_items()})
        self.connections.append(record)
        return record

    def _pieces(self, unit: bytes):
        piece = unit * (self.chunk_bytes // len(unit))
        for n in range(self.chunks):
            if n == 1 and self.hold is not None:
                self.hold.wait(10)
            yield piece


class FakeElevenLabs(_Fake):
    def __init__(self, *, key: str = "el-test-key", voices: tuple[str, ...] = ("21m00Tcm4TlvDq8ikWAM",),
                 **kwargs) -> None:
        super().__init__(key=key, **kwargs)
        self.voices = voices

    def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        parts = urlsplit(request.path)
        segments = parts.path.split("/")
        if len(segments) != 5 or segments[:3] != ["", "v1", "text-to-speech"] or segments[4] != "stream-input":
            return connection.respond(404, "Not found\n")
        if request.headers.get("xi-api-key") != self.key:
            return connection.respond(401, '{"detail": {"status": "invalid_api_key", "message": "Invalid API key"}}\n')
        if segments[3] not in self.voices:
            return connection.respond(400, '{"detail": {"status": "voice_not_found"}}\n')
        output_format = parse_qs(parts.query).get("output_format", ["mp3_44100_128"])[0]
        if output_format not in ELEVENLABS_UNITS:
            return connection.respond(400, '{"detail": {"status": "invalid_output_format"}}\n')
        return None

    def _handle(self, socket: ServerConnection) -> None:
        record = self._record(socket)
        unit = ELEVENLABS_UNITS[record.param("output_format") or "mp3_44100_128"]
        jobs: queue.Queue[str | None] = queue.Queue()  # text to speak; None: the input ended
        final = threading.Event()
        speaker = threading.Thread(target=self._speak, args=(socket, unit, jobs, final), daemon=True)
        speaker.start()
        pending = ""
        try:
            for raw in socket:
                message = json.loads(raw)
                record.messages.append(message)
                text = message.get("text")
                if not isinstance(text, str) or (len(record.messages) == 1 and text != " "):
                    socket.close(1008, "the first message must be {\"text\": \" \"}, then text")
                    return
                if len(record.messages) == 1:
                    continue
                pending += text
                if (message.get("flush") or text == "") and pending.strip():
                    jobs.put(pending)
                    pending = ""
                if text == "":
                    jobs.put(None)
        except ConnectionClosed:
            pass
        finally:
            record.hung_up = not final.is_set()  # the client went before the answer was whole
            record.closed.set()
            jobs.put(None)
            speaker.join(10)

    def _speak(self, socket: ServerConnection, unit: bytes, jobs: "queue.Queue[str | None]",
               final: threading.Event) -> None:
        try:
            while (text := jobs.get()) is not None:
                for piece in self._pieces(unit):
                    socket.send(json.dumps({"audio": base64.b64encode(piece).decode(), "isFinal": None,
                                            "normalizedAlignment": {"chars": list(text)[:1]}}))
            final.set()  # the answer is whole from here on
            socket.send(json.dumps({"isFinal": True}))
            socket.close()
        except ConnectionClosed:
            pass


class FakeCartesia(_Fake):
    def __init__(self, *, key: str = "ca-test-key",
                 voices: tuple[str, ...] = ("3f4ade23-6eb4-4279-ab05-6a144947c4d5",), **kwargs) -> None:
        super().__init__(key=key, **kwargs)
        self.voices = voices

    def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        if urlsplit(request.path).path != "/tts/websocket":
            return connection.respond(404, "Not found\n")
        keys = {request.headers.get("X-API-Key"), (request.headers.get("Authorization") or "").removeprefix("Bearer ")}
        if self.key not in keys:
            return connection.respond(401, '{"error": "Invalid API key"}\n')
        if not request.headers.get("Cartesia-Version"):
            return connection.respond(400, '{"error": "Cartesia-Version header is required"}\n')
        return None

    def _problem(self, message: dict) -> str:
        output = message.get("output_format") or {}
        voice = message.get("voice") or {}
        if not message.get("model_id") or not isinstance(message.get("transcript"), str):
            return "model_id and transcript are required"
        if voice.get("mode") != "id" or voice.get("id") not in self.voices:
            return "unknown voice"
        if output.get("container") != "raw" or output.get("encoding") not in CARTESIA_UNITS \
                or output.get("sample_rate") not in CARTESIA_RATES:
            return "output_format must be raw with a known encoding and sample_rate"
        return ""

    def _handle(self, socket: ServerConnection) -> None:
        record = self._record(socket)
        speaking: dict[str, threading.Thread] = {}
        pending: dict[str, str] = {}  # a context's text not yet spoken (to be continued)
        flushes: dict[str, int] = {}  # a context's flushes so far
        try:
            for raw in socket:
                message = json.loads(raw)
                record.messages.append(message)
                context = str(message.get("context_id") or "")
                if message.get("cancel"):
                    record.cancelled.append(context)
                    continue
                problem = self._problem(message)
                if problem:
                    socket.send(json.dumps({"type": "error", "context_id": context, "status_code": 400,
                                            "done": True, "error": problem}))
                    continue
                pending[context] = pending.get(context, "") + message["transcript"]
                flush, whole = bool(message.get("flush")), not message.get("continue", False)
                if not (flush or whole):
                    continue  # buffered, as Cartesia waits for more of a context's text
                text, pending[context] = pending[context], ""
                flush_id = flushes.get(context, 0) + 1  # of the text since the last flush
                if flush:
                    flushes[context] = flush_id
                earlier = speaking.get(context)
                if earlier is not None:
                    earlier.join()
                speaking[context] = threading.Thread(target=self._speak, daemon=True, args=(
                    socket, record, message, text, flush_id, flush, whole))
                speaking[context].start()
        except ConnectionClosed:
            pass
        finally:
            record.closed.set()
            for thread in speaking.values():
                thread.join(10)

    def _speak(self, socket: ServerConnection, record: Connection, message: dict, text: str,
               flush_id: int, flush: bool, whole: bool) -> None:
        context = message["context_id"]
        unit = CARTESIA_UNITS[message["output_format"]["encoding"]]
        try:
            if text.strip():
                for piece in self._pieces(unit):
                    if context in record.cancelled:
                        return
                    socket.send(json.dumps({"type": "chunk", "context_id": context, "data": base64.b64encode(
                        piece).decode(), "done": False, "status_code": 206, "step_time": 1.0,
                        "flush_id": flush_id}))
        except ConnectionClosed:
            record.hung_up = True  # before all of the text's audio was sent
            return
        with contextlib.suppress(ConnectionClosed):  # a client that has all the audio may go
            if context not in record.cancelled and flush:
                socket.send(json.dumps({"type": "flush_done", "context_id": context, "flush_id": flush_id,
                                        "flush_done": True, "done": False, "status_code": 206}))
            if context not in record.cancelled and whole:
                socket.send(json.dumps({"type": "done", "context_id": context, "done": True, "status_code": 206}))
