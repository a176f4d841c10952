"""Cartesia text-to-speech over its WebSocket (protocol `cartesia-ws`):
`<base>/tts/websocket` with `Authorization: Bearer <key>` (and `X-API-Key: <key>`,
the header of earlier API versions) and `Cartesia-Version`.

Each sentence the lane streams is one generation request in a context of its own
(`context_id`): `{"context_id", "model_id", "transcript", "voice": {"mode": "id",
"id"}, "language", "output_format": {"container": "raw", "encoding", "sample_rate"},
"continue": false}` — `continue: false` says the context's text is whole, so Cartesia
flushes it at once. It answers `{"type": "chunk", "data": "<base64>"}` messages, then
`{"type": "done"}`; `{"type": "error"}` with a `status_code` on failure. Barge-in sends
`{"context_id", "cancel": true}` — Cartesia stops generating that context — and closes.

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

from registry_app.lanes.failover import LaneFailure
from registry_app.lanes.plans import lane_model
from registry_app.snapshot import SnapshotLane
from speech_app.streaming import (
    SYNTHESIS_STALL_SECONDS,
    CallAudio,
    Parsed,
    ProtocolModule,
    SocketSpeech,
    declare,
    http_outcome,
    lane_voices,
    ws_connect,
)

PROTOCOL = "cartesia-ws"
PATH = "/tts/websocket"
DEFAULT_MODEL = "sonic-3"
# The API version this module speaks (the Cartesia-Version header).
API_VERSION = "2026-08-14"
ENCODINGS = {"linear16": "pcm_s16le", "alaw": "pcm_alaw", "mulaw": "pcm_mulaw"}
SAMPLE_RATES = (8000, 16000, 22050, 24000, 44100, 48000)
MAX_TEXT_CHARS = 5000


def output_format(audio: CallAudio) -> dict[str, object]:
    if audio.sample_rate not in SAMPLE_RATES:
        raise LaneFailure("unavailable", f"Cartesia has no raw format at {audio.sample_rate} Hz")
    return {"container": "raw", "encoding": ENCODINGS[audio.encoding], "sample_rate": audio.sample_rate}


def websocket_url(base: str) -> str:
    return base if base.endswith(PATH) else f"{base}{PATH}"


def parser(context_id: str) -> Callable[[str | bytes], Parsed]:
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
            why = message.get("error") or message.get("title") or ""
            raise LaneFailure(http_outcome(status), f"Cartesia error {status}: {why}".strip())
        if kind == "chunk":
            return (base64.b64decode(message["data"]) if message.get("data") else b""), bool(message.get("done"))
        return b"", kind == "done"
    return parse


class CartesiaSynthesizer:
    """The StreamingSynthesizer of a `cartesia-ws` lane."""

    protocol = PROTOCOL

    def __init__(self, lane: SnapshotLane, *, endpoint: str, key: str, voice: str) -> None:
        voices = lane_voices(lane)
        self.lane_id, self.endpoint, self._key = lane.id, endpoint, key
        self.voice = voice or (voices[0] if voices else "")
        if not self.voice:
            raise LaneFailure("unavailable", f"lane {lane.id} names no voice (params.voices)")
        model = lane_model(lane)
        self.model = DEFAULT_MODEL if model == lane.id else model

    def speak(self, text: str, *, audio: CallAudio, language: str) -> SocketSpeech:
        if len(text) > MAX_TEXT_CHARS:
            raise LaneFailure("unavailable", f"a text of more than {MAX_TEXT_CHARS} characters")
        request = {"context_id": str(uuid.uuid4()), "model_id": self.model, "transcript": text.strip(),
                   "voice": {"mode": "id", "id": self.voice}, "language": language,
                   "output_format": output_format(audio), "continue": False}
        socket = ws_connect(websocket_url(self.endpoint), vendor="Cartesia", open_timeout=SYNTHESIS_STALL_SECONDS, headers={
            "Authorization": f"Bearer {self._key}", "X-API-Key": self._key, "Cartesia-Version": API_VERSION})
        context = str(request["context_id"])
        speech = SocketSpeech(socket, vendor="Cartesia", parse=parser(context),
                              cancel_message=json.dumps({"context_id": context, "cancel": True}))
        # A connection Cartesia closes at once says why in its messages: the stream reads them.
        with contextlib.suppress(WebSocketException, OSError):
            socket.send(json.dumps(request))
        return speech


declare(ProtocolModule(
    protocol=PROTOCOL, capability="tts", default_endpoint="wss://api.cartesia.ai", schemes=("wss", "ws"),
    make=lambda lane, endpoint, key, voice: CartesiaSynthesizer(lane, endpoint=endpoint, key=key, voice=voice),
))
