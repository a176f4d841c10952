"""A fake OpenAI Realtime server (WebSocket `/v1/realtime?model=…`, `Authorization:
Bearer <key>`) on loopback, speaking the GA protocol as OpenAI documents it and as the
`openai` SDK's types describe it: every event it receives is checked against the SDK's
`RealtimeClientEvent` (a beta name or a beta audio format such as `g711_ulaw` is refused
with an `error` event, as the real server refuses what it does not know), and every
event it sends against `RealtimeServerEvent` (a mismatch is a problem of the fake,
recorded in `problems`).

It hears by energy (its server VAD): `input_audio_buffer.speech_started` when the
caller's audio (in the session's input format) gets loud, and after
`silence_duration_ms` of quiet `speech_stopped`, `committed`, the user item, the
transcription (`heard`, one text per turn) and, with `create_response`, a response.
Responses follow `replies`, one per response: `{"say": text}` (the transcript as deltas,
then `seconds` of a `tone_hz` tone in the output format as audio deltas, sent at
`pace` times real time so that a barge-in finds it under way; both per reply too; the
first audio delta `response_delay` seconds after the response began, the vendor's
thinking time, as a setting of the fake for the benchmark) or
`{"tool": name, "arguments": {...}}` (a function call; the next reply waits for the
client's `response.create`) or `{"close": true}` (the server drops the connection). `response.cancel` ends the response under way
(`response.done` with status `cancelled`); with none under way it is an error
(`response_cancel_not_active`), as the real server answers. Every connection is recorded
(path, query, headers, the events received, the audio bytes, the errors sent).
"""
import asyncio
import base64
import json
import threading
import uuid
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import numpy
from openai.types.realtime import RealtimeClientEvent, RealtimeServerEvent
from pydantic import TypeAdapter, ValidationError
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response

from agent_app.audio import alaw_decode, alaw_encode, mulaw_decode, mulaw_encode

CLIENT_EVENTS: TypeAdapter = TypeAdapter(RealtimeClientEvent)
SERVER_EVENTS: TypeAdapter = TypeAdapter(RealtimeServerEvent)
FRAME_SEC = 0.02
LOUD_RMS = 400


def _decode(fmt: dict, data: bytes) -> numpy.ndarray:
    kind = fmt.get("type")
    if kind == "audio/pcmu":
        return mulaw_decode(data)
    if kind == "audio/pcma":
        return alaw_decode(data)
    return numpy.frombuffer(data[: len(data) // 2 * 2], dtype="<i2")


def _rate(fmt: dict) -> int:
    return 24000 if fmt.get("type", "audio/pcm") == "audio/pcm" else 8000


def tone(fmt: dict, hz: float, seconds: float) -> bytes:
    rate = _rate(fmt)
    samples = (numpy.sin(2 * numpy.pi * hz * numpy.arange(int(rate * seconds)) / rate) * 8000).astype(numpy.int16)
    kind = fmt.get("type")
    if kind == "audio/pcmu":
        return mulaw_encode(samples)
    if kind == "audio/pcma":
        return alaw_encode(samples)
    return samples.astype("<i2").tobytes()


@dataclass
class Connection:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    received: list[dict] = field(default_factory=list)
    audio: bytearray = field(default_factory=bytearray)
    errors: list[dict] = field(default_factory=list)
    session: dict = field(default_factory=dict)
    closed: threading.Event = field(default_factory=threading.Event)

    def kinds(self) -> list[str | None]:
        return [event.get("type") for event in self.received]


class FakeRealtime:
    def __init__(self, *, heard: list[str] | None = None, replies: list[dict] | None = None, key: str = "rt-test-key",
                 tone_hz: float = 770.0, seconds: float = 1.0, pace: float = 4.0, status: int | None = None,
                 beta: bool = False, response_delay: float = 0.0) -> None:
        self.heard, self.replies = list(heard or []), list(replies or [])
        self.response_delay = response_delay
        self.beta = beta  # speaks the retired beta protocol's names (response.audio.delta)
        self.key, self.tone_hz, self.seconds, self.pace, self.status = key, tone_hz, seconds, pace, status
        self.connections: list[Connection] = []
        self.problems: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._server: Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------
    def __enter__(self) -> "FakeRealtime":
        ready = threading.Event()

        async def start() -> None:
            self._server = await serve(self._handle, "127.0.0.1", 0, process_request=self._check, max_size=2 ** 22)
            ready.set()
            await self._server.wait_closed()

        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(start(),), daemon=True)
        self._thread.start()
        assert ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._loop.call_soon_threadsafe(self._server.close)
        if self._thread is not None:
            self._thread.join(10)

    @property
    def base_url(self) -> str:
        assert self._server is not None
        port = next(iter(self._server.sockets)).getsockname()[1]
        return f"ws://127.0.0.1:{port}"

    def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        if self.status is not None:
            return connection.respond(self.status, "refused\n")
        if request.headers.get("Authorization") != f"Bearer {self.key}":
            return connection.respond(401, "Incorrect API key provided\n")
        parts = urlsplit(request.path)
        if parts.path != "/v1/realtime":
            return connection.respond(404, "Not found\n")
        if not parse_qs(parts.query).get("model"):
            return connection.respond(400, "Missing model\n")
        return None

    # --- one connection ---------------------------------------------------------------
    async def _handle(self, socket: ServerConnection) -> None:
        request = socket.request
        assert request is not None
        parts = urlsplit(request.path)
        record = Connection(path=parts.path, query=parse_qs(parts.query),
                            headers={name.lower(): value for name, value in request.headers.raw_items()})
        self.connections.append(record)
        state = _State(record.query["model"][0])
        await self._send(socket, {"type": "session.created", "session": state.session()})
        try:
            async for raw in socket:
                await self._receive(socket, record, state, raw)
        except Exception as exc:  # noqa: BLE001 - the fake records what broke it
            if not isinstance(exc, (ConnectionError,)) and "ConnectionClosed" not in type(exc).__name__:
                self.problems.append(f"fake failed: {exc!r}")
        finally:
            if state.responding is not None:
                state.responding.cancel()
            record.closed.set()

    async def _send(self, socket: ServerConnection, event: dict) -> None:
        event = {"event_id": f"event_{uuid.uuid4().hex[:20]}", **event}
        if self.beta and event["type"].startswith("response.output_audio"):
            event["type"] = event["type"].replace("response.output_audio", "response.audio")
            return await socket.send(json.dumps(event))
        try:
            SERVER_EVENTS.validate_python(event)
        except ValidationError as exc:
            self.problems.append(f"{event['type']}: {exc}")
        await socket.send(json.dumps(event))

    async def _error(self, socket: ServerConnection, record: Connection, code: str, message: str,
                     event_id: str | None = None) -> None:
        error = {"type": "invalid_request_error", "code": code, "message": message, "event_id": event_id}
        record.errors.append(error)
        await self._send(socket, {"type": "error", "error": error})

    async def _receive(self, socket: ServerConnection, record: Connection, state: "_State", raw: str | bytes) -> None:
        try:
            event = json.loads(raw)
            CLIENT_EVENTS.validate_python(event)
        except (ValueError, ValidationError) as exc:
            kind = event.get("type") if isinstance(locals().get("event"), dict) else None
            record.received.append({"type": kind, "refused": True})
            return await self._error(socket, record, "invalid_value", f"Invalid client event: {str(exc)[:300]}")
        record.received.append(event)
        kind = event["type"]
        if kind == "session.update":
            session = event["session"]
            record.session = session
            state.configure(session)
            await self._send(socket, {"type": "session.updated", "session": state.session()})
        elif kind == "input_audio_buffer.append":
            data = base64.b64decode(event["audio"])
            record.audio += data
            await self._hear(socket, state, data)
        elif kind == "response.cancel":
            if state.responding is None or state.responding.done():
                return await self._error(socket, record, "response_cancel_not_active",
                                         "Cancellation failed: no active response found.", event.get("event_id"))
            state.cancelled = True
        elif kind == "conversation.item.create":
            item = {"id": f"item_{uuid.uuid4().hex[:20]}", "object": "realtime.item", "status": "completed",
                    **event["item"]}
            await self._send(socket, {"type": "conversation.item.added", "previous_item_id": None, "item": item})
            await self._send(socket, {"type": "conversation.item.done", "previous_item_id": None, "item": item})
        elif kind == "response.create":
            self._respond(socket, state)

    async def _hear(self, socket: ServerConnection, state: "_State", data: bytes) -> None:
        samples = _decode(state.input_format, data).astype(numpy.float64)
        frame = int(_rate(state.input_format) * FRAME_SEC)
        for offset in range(0, len(samples) - frame + 1, frame):
            loud = float(numpy.sqrt(numpy.mean(samples[offset:offset + frame] ** 2))) > LOUD_RMS
            state.heard_ms += FRAME_SEC * 1000
            if loud and not state.speaking:
                state.speaking, state.item_id = True, f"item_{uuid.uuid4().hex[:20]}"
                await self._send(socket, {"type": "input_audio_buffer.speech_started",
                                          "audio_start_ms": int(state.heard_ms), "item_id": state.item_id})
                if state.interrupt and state.responding is not None and not state.responding.done():
                    state.cancelled = True
            if loud:
                state.quiet_ms = 0.0
            elif state.speaking:
                state.quiet_ms += FRAME_SEC * 1000
                if state.quiet_ms >= state.silence_ms:
                    state.speaking = False
                    await self._turn_ended(socket, state)

    async def _turn_ended(self, socket: ServerConnection, state: "_State") -> None:
        item_id = state.item_id
        await self._send(socket, {"type": "input_audio_buffer.speech_stopped", "audio_end_ms": int(state.heard_ms),
                                  "item_id": item_id})
        await self._send(socket, {"type": "input_audio_buffer.committed", "item_id": item_id,
                                  "previous_item_id": None})
        text = self.heard.pop(0) if self.heard else ""
        item = {"id": item_id, "type": "message", "role": "user", "object": "realtime.item", "status": "completed",
                "content": [{"type": "input_audio", "transcript": None}]}
        await self._send(socket, {"type": "conversation.item.added", "previous_item_id": None, "item": item})
        await self._send(socket, {"type": "conversation.item.input_audio_transcription.completed", "item_id": item_id,
                                  "content_index": 0, "transcript": text,
                                  "usage": {"type": "duration", "seconds": round(state.heard_ms / 1000, 2)}})
        if state.create_response and (state.responding is None or state.responding.done()):
            self._respond(socket, state)

    def _respond(self, socket: ServerConnection, state: "_State") -> None:
        reply = self.replies.pop(0) if self.replies else {"say": ""}
        state.cancelled = False
        state.responding = asyncio.ensure_future(self._response(socket, state, reply))

    async def _response(self, socket: ServerConnection, state: "_State", reply: dict) -> None:
        response_id, item_id = f"resp_{uuid.uuid4().hex[:20]}", f"item_{uuid.uuid4().hex[:20]}"
        base = {"response_id": response_id, "item_id": item_id, "output_index": 0}
        response = {"id": response_id, "object": "realtime.response", "status": "in_progress", "output": [],
                    "output_modalities": ["audio"]}
        await self._send(socket, {"type": "response.created", "response": response})
        if reply.get("close"):  # the server goes away mid-call
            await socket.close(1011, "server error")
            return
        if "tool" in reply:
            call_id = f"call_{uuid.uuid4().hex[:16]}"
            arguments = json.dumps(reply.get("arguments", {}), ensure_ascii=False)
            item = {"id": item_id, "type": "function_call", "object": "realtime.item", "status": "completed",
                    "call_id": call_id, "name": reply["tool"], "arguments": arguments}
            await self._send(socket, {"type": "response.output_item.added", "response_id": response_id,
                                      "output_index": 0, "item": {**item, "status": "in_progress", "arguments": ""}})
            await self._send(socket, {"type": "response.function_call_arguments.delta", **base, "call_id": call_id,
                                      "delta": arguments})
            await self._send(socket, {"type": "response.function_call_arguments.done", **base, "call_id": call_id,
                                      "name": reply["tool"], "arguments": arguments})
            await self._send(socket, {"type": "response.output_item.done", "response_id": response_id,
                                      "output_index": 0, "item": item})
            await self._send(socket, {"type": "response.done",
                                      "response": {**response, "status": "completed", "output": [item]}})
            return
        text = reply.get("say", "")
        part = {**base, "content_index": 0}
        item = {"id": item_id, "type": "message", "role": "assistant", "object": "realtime.item",
                "status": "in_progress", "content": []}
        await self._send(socket, {"type": "response.output_item.added", "response_id": response_id,
                                  "output_index": 0, "item": item})
        await self._send(socket, {"type": "response.content_part.added", **part,
                                  "part": {"type": "audio", "transcript": ""}})
        if self.response_delay:
            await asyncio.sleep(self.response_delay)  # the model's time to its first audio
        said: list[str] = []
        for word in text.split():
            said.append(word)
            await self._send(socket, {"type": "response.output_audio_transcript.delta", **part,
                                      "delta": (" " if len(said) > 1 else "") + word})
        audio = tone(state.output_format, self.tone_hz, reply.get("seconds", self.seconds))
        chunk = int(_rate(state.output_format) * 0.1) * (2 if state.output_format.get("type") == "audio/pcm" else 1)
        for offset in range(0, len(audio), chunk):
            if state.cancelled:
                break
            await self._send(socket, {"type": "response.output_audio.delta", **part,
                                      "delta": base64.b64encode(audio[offset:offset + chunk]).decode()})
            await asyncio.sleep(0.1 / reply.get("pace", self.pace))
        status = "cancelled" if state.cancelled else "completed"
        if status == "completed":
            await self._send(socket, {"type": "response.output_audio.done", **part})
            await self._send(socket, {"type": "response.output_audio_transcript.done", **part, "transcript": text})
        done = {**item, "status": "completed" if status == "completed" else "incomplete",
                "content": [{"type": "output_audio", "transcript": " ".join(said)}]}
        await self._send(socket, {"type": "response.output_item.done", "response_id": response_id,
                                  "output_index": 0, "item": done})
        await self._send(socket, {"type": "response.done",
                                  "response": {**response, "status": status, "output": [done]}})


class _State:
    """What one connection's session is configured to (session.update)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.input_format: dict = {"type": "audio/pcm", "rate": 24000}
        self.output_format: dict = {"type": "audio/pcm", "rate": 24000}
        self.silence_ms, self.create_response, self.interrupt = 500, True, True
        self.instructions, self.voice, self.tools = "", "alloy", list[dict]()
        self.speaking, self.item_id, self.heard_ms, self.quiet_ms = False, "", 0.0, 0.0
        self.responding: asyncio.Future | None = None
        self.cancelled = False

    def configure(self, session: dict) -> None:
        audio = session.get("audio") or {}
        audio_in, audio_out = audio.get("input") or {}, audio.get("output") or {}
        self.input_format = audio_in.get("format") or self.input_format
        self.output_format = audio_out.get("format") or self.output_format
        turns = audio_in.get("turn_detection") or {}
        self.silence_ms = turns.get("silence_duration_ms", self.silence_ms)
        self.create_response = turns.get("create_response", True)
        self.interrupt = turns.get("interrupt_response", True)
        self.instructions = session.get("instructions", self.instructions)
        self.voice = audio_out.get("voice", self.voice)
        self.tools = session.get("tools", self.tools)

    def session(self) -> dict:
        return {"type": "realtime", "object": "realtime.session", "id": "sess_fake", "model": self.model,
                "instructions": self.instructions, "output_modalities": ["audio"], "tools": self.tools,
                "audio": {"input": {"format": self.input_format,
                                    "turn_detection": {"type": "server_vad", "silence_duration_ms": self.silence_ms,
                                                       "create_response": self.create_response,
                                                       "interrupt_response": self.interrupt}},
                          "output": {"format": self.output_format, "voice": self.voice}}}
