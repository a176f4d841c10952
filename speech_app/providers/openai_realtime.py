"""OpenAI Realtime (protocol `openai-realtime`): speech to speech over one WebSocket per
call to `<base>/v1/realtime?model=<model>` with `Authorization: Bearer <key>`, in the GA
protocol (the beta protocol was retired in May 2026; its names are refused, never sent).

On connecting the session is configured with one `session.update` (the server's
`session.created` may come before it is read): `session.type: "realtime"`, the model, the instructions, audio only,
the tools (`{"type": "function", "name", "description", "parameters"}`), and
`audio.input`/`audio.output` with the format as an object — `{"type": "audio/pcma"}`
(A-law) or `{"type": "audio/pcmu"}` (μ-law) for phone calls, unconverted both ways, and
`{"type": "audio/pcm", "rate": 24000}` otherwise — the transcription of the caller
(`audio.input.transcription`: model and language), server VAD for the turns with
`create_response` (the server answers at the end of each turn) and
`interrupt_response: false` (a barge-in is cancelled by us: `response.cancel`, so the
cancel and the clearing of our queued audio go together), and the voice. It waits for
`session.updated` (an `error` instead, or no answer within GATEWAY_TIMEOUT_SEC, is a
failed lane).

Client events: `input_audio_buffer.append` (the caller's audio, base64),
`response.cancel`, `conversation.item.create` (a `function_call_output`),
`response.create`. Server events read: `response.created`/`response.done` (its status
and its `function_call` items), `response.output_audio.delta`,
`response.output_audio_transcript.delta`/`.done`,
`response.function_call_arguments.done`, `input_audio_buffer.speech_started`,
`conversation.item.input_audio_transcription.completed`, `error`. A beta event name
(`response.audio.delta`, …) or a beta audio format (`g711_ulaw`) from the server is a
failed lane (`rejected`): the server speaks the retired protocol.

The same wire format serves compatible self-hosted servers: GATEWAY_ENDPOINT_<LANE> is
their base URL (a URL that already ends with /v1/realtime is used as it is).
"""
import asyncio
import base64
import binascii
import contextlib
import json
import logging
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from registry_app.lanes.failover import LaneFailure
from registry_app.lanes.plans import lane_model
from registry_app.snapshot import SnapshotLane
from speech_app.streaming import CallAudio, ProtocolModule, declare
from speech_app.voice_agent import (
    AgentAudio,
    AgentEvent,
    AgentText,
    AgentToolCall,
    CallerStarted,
    CallerText,
    ResponseDone,
)

logger = logging.getLogger("speech_app")

PROTOCOL = "openai-realtime"
PATH = "/v1/realtime"
DEFAULT_MODEL = "gpt-realtime-1.5"
DEFAULT_VOICE = "marin"
DEFAULT_TRANSCRIPTION_MODEL = "gpt-4o-mini-transcribe"
# The GA protocol's PCM is 24 kHz only.
PCM_RATE = 24000
FORMATS: dict[str, dict[str, Any]] = {"alaw": {"type": "audio/pcma"}, "mulaw": {"type": "audio/pcmu"},
                                      "linear16": {"type": "audio/pcm", "rate": PCM_RATE}}
# Silence after which the server's VAD ends the caller's turn.
SILENCE_MS = 500
# What only the retired beta protocol says: a server that says it is refused.
BETA_EVENTS = frozenset({"response.audio.delta", "response.audio.done", "response.audio_transcript.delta",
                         "response.audio_transcript.done", "response.text.delta", "response.text.done"})
BETA_FORMATS = frozenset({"pcm16", "g711_ulaw", "g711_alaw"})
# Seconds the close handshake may take at the call's end.
CLOSE_TIMEOUT_SEC = 2
# The largest message the server may send (an audio delta is a few kB).
MAX_MESSAGE_BYTES = 2 ** 22


def realtime_url(base: str, *, model: str) -> str:
    path = "" if base.endswith(PATH) else PATH  # a base URL, or the vendor's whole URL
    return f"{base}{path}?{urlencode({'model': model})}"


def session_config(*, model: str, audio: CallAudio, instructions: str, tools: list[dict[str, Any]], language: str,
                   voice: str, transcription_model: str) -> dict[str, Any]:
    """The `session` of the one `session.update` (GA: `type` set, formats as objects).
    `tools` in the chat format (tools_app.definitions) become the realtime format."""
    audio_format = FORMATS[audio.encoding]
    functions = [{"type": "function", "name": tool["function"]["name"],
                  "description": tool["function"].get("description", ""),
                  "parameters": tool["function"].get("parameters", {"type": "object", "properties": {}})}
                 for tool in tools]
    return {
        "type": "realtime", "model": model, "instructions": instructions, "output_modalities": ["audio"],
        "audio": {
            "input": {"format": audio_format,
                      "transcription": {"model": transcription_model, "language": language.split("-")[0]},
                      "turn_detection": {"type": "server_vad", "create_response": True,
                                         "interrupt_response": False, "silence_duration_ms": SILENCE_MS}},
            "output": {"format": audio_format, "voice": voice},
        },
        **({"tools": functions, "tool_choice": "auto"} if functions else {}),
    }


def _beta_format(session: dict[str, Any]) -> bool:
    audio = session.get("audio") or {}
    formats = [(audio.get(side) or {}).get("format") for side in ("input", "output")]
    formats += [session.get("input_audio_format"), session.get("output_audio_format")]
    return any(isinstance(found, str) and found in BETA_FORMATS for found in formats)


class RealtimeSession:
    """One call's realtime session (the VoiceAgentSession of `openai-realtime`)."""

    def __init__(self, socket: ClientConnection, audio: CallAudio) -> None:
        self._socket, self.audio = socket, audio
        self._responding = False
        self._closed = False

    @property
    def responding(self) -> bool:
        return self._responding

    async def _send(self, event: dict[str, Any]) -> None:
        try:
            await self._socket.send(json.dumps(event))
        except (WebSocketException, OSError) as exc:
            raise LaneFailure("connection_error", f"OpenAI Realtime connection lost: {exc}") from None

    async def send_audio(self, data: bytes) -> None:
        await self._send({"type": "input_audio_buffer.append", "audio": base64.b64encode(data).decode()})

    async def cancel(self) -> None:
        if self._responding:
            self._responding = False
            await self._send({"type": "response.cancel"})

    async def tool_result(self, call_id: str, output: str) -> None:
        await self._send({"type": "conversation.item.create",
                          "item": {"type": "function_call_output", "call_id": call_id, "output": output}})

    async def respond(self) -> None:
        await self._send({"type": "response.create"})

    async def _receive(self) -> dict[str, Any]:
        try:
            raw = await self._socket.recv()
        except (ConnectionClosed, OSError) as exc:
            raise LaneFailure("connection_error", f"OpenAI Realtime closed the connection: {exc}") from None
        try:
            message = json.loads(raw)
        except ValueError:
            raise LaneFailure("server_error", "OpenAI Realtime sent a message that is not JSON") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise LaneFailure("server_error", "OpenAI Realtime sent a message without a type")
        if message["type"] in BETA_EVENTS:
            raise LaneFailure("rejected", f"the server speaks the retired beta protocol ({message['type']})")
        return message

    async def next_event(self) -> AgentEvent:
        while True:
            message = await self._receive()
            event = self._event(message)
            if event is not None:
                return event

    def _event(self, message: dict[str, Any]) -> AgentEvent | None:
        kind = message["type"]
        if kind == "response.output_audio.delta":
            try:
                return AgentAudio(base64.b64decode(message.get("delta", ""), validate=True))
            except (binascii.Error, ValueError):
                raise LaneFailure("server_error", "OpenAI Realtime sent audio that is not base64") from None
        if kind == "response.output_audio_transcript.delta":
            return AgentText(str(message.get("delta", "")), final=False)
        if kind == "response.output_audio_transcript.done":
            return AgentText(str(message.get("transcript", "")), final=True)
        if kind == "input_audio_buffer.speech_started":
            return CallerStarted()
        if kind == "conversation.item.input_audio_transcription.completed":
            return CallerText(str(message.get("transcript", "")).strip())
        if kind == "response.function_call_arguments.done":
            return AgentToolCall(call_id=str(message.get("call_id", "")), name=str(message.get("name", "")),
                                 arguments=str(message.get("arguments") or "{}"))
        if kind == "response.created":
            self._responding = True
        elif kind == "response.done":
            self._responding = False
            return ResponseDone(str((message.get("response") or {}).get("status") or "completed"))
        elif kind == "session.updated" and _beta_format(message.get("session") or {}):
            raise LaneFailure("rejected", "the server configured a beta audio format")
        elif kind == "error":
            # A refused client event (e.g. a cancel that crossed the response's end): the
            # session goes on; the server closes the connection where it cannot.
            error = message.get("error") or {}
            logger.warning("OpenAI Realtime refused an event: %s %s", error.get("code"), error.get("message"))
        return None

    async def configure(self, config: dict[str, Any]) -> None:
        """`session.update` at once (the server's `session.created` may come before or
        after it), answered by `session.updated`."""
        async with asyncio.timeout(settings.GATEWAY_TIMEOUT_SEC):
            await self._send({"type": "session.update", "session": config})
            while (message := await self._receive())["type"] != "session.updated":
                if message["type"] == "error":
                    raise LaneFailure("rejected", "OpenAI Realtime refused the session: "
                                                  f"{(message.get('error') or {}).get('message')}")
            self._event(message)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            await self._socket.close()


class RealtimeAgent:
    """The VoiceAgent of an `openai-realtime` lane: model GATEWAY_MODEL_<LANE> or the
    lane's `params.model`, voice `params.voice`, the caller's transcription by
    `params.transcription_model`."""

    protocol = PROTOCOL

    def __init__(self, lane: SnapshotLane, *, endpoint: str, key: str) -> None:
        self.lane_id, self.endpoint, self._key = lane.id, endpoint, key
        params = lane.entry.get("params") or {}
        model = lane_model(lane)
        self.model = DEFAULT_MODEL if model == lane.id else model
        self.voice = str(params.get("voice") or DEFAULT_VOICE)
        self.transcription_model = str(params.get("transcription_model") or DEFAULT_TRANSCRIPTION_MODEL)

    async def open(self, *, audio: CallAudio, instructions: str, tools: list[dict[str, Any]],
                   language: str) -> RealtimeSession:
        if audio.encoding == "linear16" and audio.sample_rate != PCM_RATE:
            raise ValueError(f"OpenAI Realtime takes PCM at {PCM_RATE} Hz only")
        try:
            socket = await connect(realtime_url(self.endpoint, model=self.model),
                                   additional_headers={"Authorization": f"Bearer {self._key}"},
                                   open_timeout=settings.GATEWAY_TIMEOUT_SEC, close_timeout=CLOSE_TIMEOUT_SEC,
                                   max_size=MAX_MESSAGE_BYTES)
        except InvalidStatus as exc:
            status = exc.response.status_code
            outcome = "rate_limited" if status == 429 else "server_error" if status >= 500 else "rejected"
            raise LaneFailure(outcome, f"OpenAI Realtime refused the connection with HTTP {status}") from None
        except TimeoutError:
            raise LaneFailure("timeout", "OpenAI Realtime did not accept the connection in time") from None
        except (WebSocketException, OSError) as exc:
            raise LaneFailure("connection_error", f"OpenAI Realtime cannot be reached: {exc}") from None
        session = RealtimeSession(socket, audio)
        try:
            await session.configure(session_config(
                model=self.model, audio=audio, instructions=instructions, tools=tools, language=language,
                voice=self.voice, transcription_model=self.transcription_model))
        except TimeoutError:
            await session.close()
            raise LaneFailure("timeout", "OpenAI Realtime did not configure the session in time") from None
        except BaseException:
            await session.close()
            raise
        return session


declare(ProtocolModule(
    protocol=PROTOCOL, capability="voice-agent", default_endpoint="wss://api.openai.com", schemes=("wss", "ws"),
    make=lambda lane, endpoint, key, voice: RealtimeAgent(lane, endpoint=endpoint, key=key),
))
