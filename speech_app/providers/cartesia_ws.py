"""Cartesia text-to-speech over its WebSocket (protocol `cartesia-ws`):
`<base>/tts/websocket` with `Authorization: Bearer <key>` (and `X-API-Key: <key>`,
the header of earlier API versions) and `Cartesia-Version`.

A generation request is `{"context_id", "model_id", "transcript", "voice": {"mode": "id",
"id"}, "language", "output_format": {"container": "raw", "encoding", "sample_rate"},
"continue"}`. Cartesia answers `{"type": "chunk", "data": "<base64>", "flush_id"}`
messages of its context, `{"type": "flush_done", "flush_id"}` when a flush's text is
spoken, `{"type": "done"}` when the context is; `{"type": "error"}` with a
`status_code` on failure. `{"context_id", "cancel": true}` stops a context.

**One context per agent turn** (`CartesiaTurn`): the turn's first sentence opens the
connection and the context; each sentence is pushed with `continue: true` (Cartesia
reads it as the continuation of the turn's earlier sentences: one voice, one prosody)
and then flushed — an empty transcript with `flush: true`, so that Cartesia speaks it
at once instead of waiting for more text; the sentence's audio is the context's chunks
until the `flush_done` of that flush (flush ids count from 1 per context). The turn's
end is an empty transcript with `continue: false`; barge-in cancels the context
(`cancel`) and closes the connection — a later sentence of the turn opens another.
A single text (`speak`: the admin's voice check) is one context of its own with
`continue: false`, which Cartesia speaks at once.

`output_format` is the call's: `pcm_alaw` / `pcm_mulaw` at 8 kHz for phone calls (no
transcoding on our side), `pcm_s16le` at 16 kHz for the browser and renders.

The base URL is `wss://api.cartesia.ai` (GATEWAY_ENDPOINT_<LANE>). Cartesia's
self-hosted (on-premises) deployment speaks the same protocol: its URL is the endpoint
(e.g. `ws://cartesia.intern:8080`), its key the lane's key.
"""
import base64
import contextlib
import json
import uuid
from collections.abc import Callable

from websockets.exceptions import WebSocketException
from websockets.protocol import State
from websockets.sync.client import ClientConnection

from registry_app.lanes.failover import LaneFailure
from speech_app.streaming import (
    SYNTHESIS_STALL_SECONDS,
    CallAudio,
    LaneSynthesizer,
    Parsed,
    ProtocolModule,
    SocketSpeech,
    SpeechTurn,
    declare,
    http_outcome,
    ws_connect,
)

PROTOCOL = "cartesia-ws"
PATH = "/tts/websocket"
DEFAULT_MODEL = "sonic-3"
# The API version this module speaks (the Cartesia-Version header).
API_VERSION = "2026-08-14"
ENCODINGS = {"linear16": "pcm_s16le", "alaw": "pcm_alaw", "mulaw": "pcm_mulaw"}
SAMPLE_RATES = (8000, 16000, 22050, 24000, 44100, 48000)


def output_format(audio: CallAudio) -> dict[str, object]:
    if audio.sample_rate not in SAMPLE_RATES:
        raise LaneFailure("unavailable", f"Cartesia has no raw format at {audio.sample_rate} Hz")
    return {"container": "raw", "encoding": ENCODINGS[audio.encoding], "sample_rate": audio.sample_rate}


def websocket_url(base: str) -> str:
    return base if base.endswith(PATH) else f"{base}{PATH}"


def parser(context_id: str, *, flush_id: int | None = None) -> Callable[[str | bytes], Parsed]:
    """The reader of one answer of context `context_id`: the context's whole answer, or
    (`flush_id`) one flushed sentence of a turn's context."""
    def parse(raw: str | bytes) -> Parsed:
        try:
            message = json.loads(raw)
        except ValueError:
            raise LaneFailure("server_error", "Cartesia sent a message that is no JSON") from None
        if not isinstance(message, dict) or message.get("context_id") not in (None, context_id):
            return b"", False  # another context's (none is ours but this one)
        kind = message.get("type")
        if kind == "error":
            code = message.get("status_code")
            status = code if isinstance(code, int) else 500
            why = message.get("error") or message.get("message") or message.get("title") or ""
            raise LaneFailure(http_outcome(status), f"Cartesia error {status}: {why}".strip())
        if kind == "chunk":
            return (base64.b64decode(message["data"]) if message.get("data") else b""), bool(message.get("done"))
        if kind == "flush_done":
            return b"", flush_id is not None and message.get("flush_id") == flush_id
        return b"", kind == "done"
    return parse


class CartesiaSynthesizer(LaneSynthesizer):
    """The StreamingSynthesizer of a `cartesia-ws` lane."""

    protocol = PROTOCOL
    default_model = DEFAULT_MODEL

    def connect(self) -> ClientConnection:
        return ws_connect(websocket_url(self.endpoint), vendor="Cartesia", open_timeout=SYNTHESIS_STALL_SECONDS,
                          headers={"Authorization": f"Bearer {self._key}", "X-API-Key": self._key,
                                   "Cartesia-Version": API_VERSION})

    def request(self, context_id: str, transcript: str, *, audio: CallAudio, language: str,
                more: bool, flush: bool = False) -> str:
        """A generation request of context `context_id` (`more`: its `continue`)."""
        request: dict[str, object] = {
            "context_id": context_id, "model_id": self.model, "transcript": transcript,
            "voice": {"mode": "id", "id": self.voice}, "language": language,
            "output_format": output_format(audio), "continue": more}
        if flush:
            request["flush"] = True
        return json.dumps(request)

    def speak(self, text: str, *, audio: CallAudio, language: str) -> SocketSpeech:
        request = self.request(context := str(uuid.uuid4()), self.checked(text), audio=audio, language=language,
                               more=False)
        socket = self.connect()
        speech = SocketSpeech(socket, vendor="Cartesia", parse=parser(context), cancel_message=cancel(context))
        sent(socket, request)
        return speech

    def open_turn(self, *, audio: CallAudio, language: str) -> "CartesiaTurn":
        return CartesiaTurn(self, audio=audio, language=language)


class CartesiaTurn(SpeechTurn):
    """One agent turn in one Cartesia context (the module's docstring)."""

    def __init__(self, synthesizer: CartesiaSynthesizer, *, audio: CallAudio, language: str) -> None:
        self._synthesizer, self._audio, self._language = synthesizer, audio, language
        self._socket: ClientConnection | None = None
        self._context, self._flushes = "", 0

    def speak(self, text: str) -> SocketSpeech:
        transcript = self._synthesizer.checked(text) + " "  # the next sentence continues it
        if self._socket is None or self._socket.state is not State.OPEN:  # the first, or after a failure or barge-in
            self._socket, self._context, self._flushes = self._synthesizer.connect(), str(uuid.uuid4()), 0
        self._flushes += 1
        speech = SocketSpeech(self._socket, vendor="Cartesia", parse=parser(self._context, flush_id=self._flushes),
                              cancel_message=cancel(self._context), keep_open=True)
        sent(self._socket, self._request(transcript, more=True),
             self._request("", more=True, flush=True))
        return speech

    def close(self) -> None:
        if self._socket is None:
            return
        sent(self._socket, self._request("", more=False))  # the turn's text is whole
        self._socket.close()

    def _request(self, transcript: str, *, more: bool, flush: bool = False) -> str:
        return self._synthesizer.request(self._context, transcript, audio=self._audio, language=self._language,
                                         more=more, flush=flush)


def cancel(context_id: str) -> str:
    return json.dumps({"context_id": context_id, "cancel": True})


def sent(socket: ClientConnection, *messages: str) -> None:
    """Sends `messages`; a connection Cartesia closed at once (a bad request) says why in
    its messages, which the answer's stream reads: sending fails quietly."""
    with contextlib.suppress(WebSocketException, OSError):
        for message in messages:
            socket.send(message)


declare(ProtocolModule(
    protocol=PROTOCOL, capability="tts", default_endpoint="wss://api.cartesia.ai", schemes=("wss", "ws"),
    make=lambda lane, endpoint, key, voice: CartesiaSynthesizer(lane, endpoint=endpoint, key=key, voice=voice),
))
