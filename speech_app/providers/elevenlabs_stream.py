"""ElevenLabs input-streaming text-to-speech (protocol `elevenlabs-stream`): one
WebSocket per sentence the lane streams, to
`<base>/v1/text-to-speech/{voice_id}/stream-input?model_id=…&output_format=…` with
`xi-api-key: <key>`.

The text goes as ElevenLabs documents input streaming: first `{"text": " ",
"voice_settings": …}` (the connection's start), then the sentence (ending in a space)
with `"flush": true` — a sentence end: ElevenLabs makes its audio now instead of
waiting for more text —, then `{"text": ""}`, which ends the input; ElevenLabs answers
`{"audio": "<base64>", …}` messages and finally `{"isFinal": true}`, then closes.

`output_format` is the call's: `pcm_16000` for the browser and renders (16-bit PCM),
`ulaw_8000` for phone calls; ElevenLabs has no A-law, so an A-law call gets μ-law
transcoded to A-law here, byte by byte (G.711 to G.711, no resampling). The stream-input
API has no cancel message: `cancel` (barge-in) closes the connection, which stops it.

The base URL is `wss://api.elevenlabs.io`, in the EU (data residency)
`wss://api.eu.residency.elevenlabs.io` (GATEWAY_ENDPOINT_<LANE>; a base that already
ends with `/v1/text-to-speech` gets only the voice's path).
"""
import base64
import contextlib
import json
from collections.abc import Callable
from urllib.parse import quote, urlencode

from websockets.exceptions import WebSocketException

from registry_app.lanes.failover import LaneFailure
from speech_app.streaming import (
    SYNTHESIS_STALL_SECONDS,
    CallAudio,
    LaneSynthesizer,
    Parsed,
    ProtocolModule,
    SocketSpeech,
    declare,
    http_outcome,
    ws_connect,
)

PROTOCOL = "elevenlabs-stream"
PATH = "/v1/text-to-speech"
DEFAULT_MODEL = "eleven_multilingual_v2"
# ElevenLabs' output formats by the call's encoding and rate (A-law is asked as μ-law).
OUTPUT_FORMATS = {
    ("linear16", 8000): "pcm_8000", ("linear16", 16000): "pcm_16000", ("linear16", 24000): "pcm_24000",
    ("mulaw", 8000): "ulaw_8000", ("alaw", 8000): "ulaw_8000",
}
VOICE_SETTINGS = {"stability": 0.5, "similarity_boost": 0.8}


def _mulaw_linear(code: int) -> int:
    code = ~code & 0xFF
    magnitude = ((((code & 0x0F) << 3) + 0x84) << ((code >> 4) & 0x07)) - 0x84
    return -magnitude if code & 0x80 else magnitude


def _alaw_code(sample: int) -> int:
    sign = 0x80 if sample >= 0 else 0
    magnitude = min(sample if sample >= 0 else -sample - 1, 32767) >> 3
    exponent = max(magnitude.bit_length() - 5, 0)
    mantissa = (magnitude >> 1 if exponent == 0 else magnitude >> exponent) & 0x0F
    return (sign | exponent << 4 | mantissa) ^ 0x55


# μ-law byte → the A-law byte of the same sample (G.711 both).
MULAW_TO_ALAW = bytes(_alaw_code(_mulaw_linear(code)) for code in range(256))


def output_format(audio: CallAudio) -> str:
    found = OUTPUT_FORMATS.get((audio.encoding, audio.sample_rate))
    if found is None:
        raise LaneFailure("unavailable", f"ElevenLabs has no format for {audio.encoding} at {audio.sample_rate} Hz")
    return found


def stream_url(base: str, *, voice: str, model: str, audio: CallAudio) -> str:
    path = "" if base.endswith(PATH) else PATH  # a base URL, or one that names the API's path already
    query = urlencode({"model_id": model, "output_format": output_format(audio)})
    return f"{base}{path}/{quote(voice, safe='')}/stream-input?{query}"


def parser(audio: CallAudio) -> Callable[[str | bytes], Parsed]:
    """The reader of ElevenLabs' messages for a call's audio (A-law: transcoded from μ-law)."""
    transcode = audio.encoding == "alaw"

    def parse(raw: str | bytes) -> Parsed:
        try:
            message = json.loads(raw)
        except ValueError:
            raise LaneFailure("server_error", "ElevenLabs sent a message that is no JSON") from None
        if not isinstance(message, dict):
            raise LaneFailure("server_error", "ElevenLabs sent a message that is no JSON object")
        if message.get("error") or (message.get("message") and not message.get("audio")):
            code = message.get("code")
            status = code if isinstance(code, int) and 400 <= code < 600 else None
            raise LaneFailure(http_outcome(status) if status is not None else "rejected",
                              f"ElevenLabs: {message.get('error') or ''} {message.get('message') or ''}".strip())
        chunk = base64.b64decode(message["audio"]) if message.get("audio") else b""
        return (chunk.translate(MULAW_TO_ALAW) if transcode else chunk), bool(message.get("isFinal"))
    return parse


class ElevenLabsSynthesizer(LaneSynthesizer):
    """The StreamingSynthesizer of an `elevenlabs-stream` lane."""

    protocol = PROTOCOL
    default_model = DEFAULT_MODEL

    def speak(self, text: str, *, audio: CallAudio, language: str) -> SocketSpeech:
        text = self.checked(text)
        url = stream_url(self.endpoint, voice=self.voice, model=self.model, audio=audio)
        socket = ws_connect(url, headers={"xi-api-key": self._key}, vendor="ElevenLabs",
                            open_timeout=SYNTHESIS_STALL_SECONDS)
        speech = SocketSpeech(socket, vendor="ElevenLabs", parse=parser(audio))
        # A connection ElevenLabs closes at once (a bad key, an unknown voice) says why in
        # its messages and close frame, which the stream reads: sending fails quietly.
        with contextlib.suppress(WebSocketException, OSError):
            socket.send(json.dumps({"text": " ", "voice_settings": VOICE_SETTINGS}))
            socket.send(json.dumps({"text": text + " ", "flush": True}))  # a sentence end
            socket.send(json.dumps({"text": ""}))  # the end of the input
        return speech


declare(ProtocolModule(
    protocol=PROTOCOL, capability="tts", default_endpoint="wss://api.elevenlabs.io", schemes=("wss", "ws"),
    make=lambda lane, endpoint, key, voice: ElevenLabsSynthesizer(lane, endpoint=endpoint, key=key, voice=voice),
))
