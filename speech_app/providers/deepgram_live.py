"""Deepgram's live speech-to-text (protocol `deepgram-live`): one WebSocket per call to
`<base>/v1/listen` with `Authorization: Token <key>`.

The query says what the call is: `model` (the lane's, default nova-3), `language`,
`encoding` (linear16, mulaw, alaw: a phone call's A-law/μ-law audio is sent as it
arrived, unconverted) and `sample_rate` from the call, `channels=1`,
`interim_results=true`, `endpointing` (ms of silence after which Deepgram marks a result
`speech_final`), `utterance_end_ms` (the gap in words after which it sends
`UtteranceEnd`), `punctuate`, `smart_format` and one `keyterm` per term of the
assistant's vocabulary (Nova-3's keyterm prompting).

Binary messages are audio; text messages are `{"type": "KeepAlive"}` (while the agent
speaks: Deepgram closes a connection without audio or KeepAlive after 10 s),
`{"type": "Finalize"}` (the turn ended: what Deepgram holds comes at once as a final
result) and `{"type": "CloseStream"}` (the call ended: it answers the rest and a
`Metadata` message, then closes). It answers `Results` (channel.alternatives[0] with
the transcript and the words' times, `is_final`, `speech_final`), `UtteranceEnd`
(`last_word_end`), `SpeechStarted` and `Metadata`.

The EU endpoint is `wss://api.eu.deepgram.com` (GATEWAY_ENDPOINT_<LANE>).
"""
import json
import queue
import threading
import time
from urllib.parse import urlencode

from websockets.exceptions import WebSocketException
from websockets.sync.client import ClientConnection

from registry_app.lanes.failover import LaneFailure
from registry_app.lanes.plans import lane_model
from registry_app.snapshot import SnapshotLane
from speech_app.recognition import Word
from speech_app.streaming import (
    STALL_SECONDS,
    CallAudio,
    EndOfSpeech,
    Event,
    Heard,
    ProtocolModule,
    RecognitionSession,
    declare,
    ws_connect,
)

PROTOCOL = "deepgram-live"
PATH = "/v1/listen"
DEFAULT_MODEL = "nova-3"
# Deepgram's endpointing: ms of silence after which a result is `speech_final`.
ENDPOINTING_MS = 300
# The gap between words after which Deepgram sends UtteranceEnd (its minimum is 1000).
UTTERANCE_END_MS = 1000
# Nova-3 takes up to 100 key terms; more are left out.
MAX_KEYTERMS = 100
# Seconds CloseStream waits for Deepgram's last results before the socket is closed.
CLOSE_WAIT_SECONDS = 2.0


def listen_url(base: str, *, model: str, audio: CallAudio, language: str, keyterms: list[str]) -> str:
    query: list[tuple[str, str]] = [
        ("model", model), ("language", language), ("encoding", audio.encoding),
        ("sample_rate", str(audio.sample_rate)), ("channels", "1"), ("interim_results", "true"),
        ("endpointing", str(ENDPOINTING_MS)), ("utterance_end_ms", str(UTTERANCE_END_MS)),
        ("punctuate", "true"), ("smart_format", "true"),
    ]
    query += [("keyterm", term) for term in dict.fromkeys(keyterms) if term.strip()][:MAX_KEYTERMS]
    path = "" if base.endswith(PATH) else PATH  # a base URL, or the vendor's whole URL
    return f"{base}{path}?{urlencode(query)}"


def _heard(message: dict) -> Heard | None:
    alternatives = (message.get("channel") or {}).get("alternatives") or []
    if not alternatives:
        return None
    best = alternatives[0]
    words = [Word(word=str(item.get("punctuated_word") or item["word"]), start=float(item["start"]),
                  end=float(item["end"]), conf=float(item.get("confidence", 0.0)))
             for item in best.get("words") or []]
    return Heard(text=str(best.get("transcript", "")), final=bool(message.get("is_final")),
                 speech_final=bool(message.get("speech_final")), words=words,
                 start=float(message.get("start", 0.0)), duration=float(message.get("duration", 0.0)))


class DeepgramSession(RecognitionSession):
    """One call's live connection; a reader thread turns Deepgram's messages into events."""

    def __init__(self, socket: ClientConnection) -> None:
        self._socket = socket
        self._events: queue.Queue[Event | LaneFailure] = queue.Queue()
        self._lock = threading.Lock()
        self._audio_since: float | None = None  # when audio started flowing without a result
        self._closed = threading.Event()
        self._metadata = threading.Event()
        self._reader = threading.Thread(target=self._read, name="deepgram-live", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for raw in self._socket:
                if isinstance(raw, bytes):
                    continue
                message = json.loads(raw)
                kind = message.get("type")
                if kind == "Results":
                    with self._lock:
                        self._audio_since = None
                    heard = _heard(message)
                    if heard is not None:
                        self._events.put(heard)
                elif kind == "UtteranceEnd":
                    self._events.put(EndOfSpeech(last_word_end=float(message.get("last_word_end", 0.0))))
                elif kind == "Metadata":
                    self._metadata.set()
                elif kind == "Error":
                    self._events.put(LaneFailure("server_error", f"Deepgram: {message.get('description', kind)}"))
        except (WebSocketException, OSError, ValueError) as exc:
            if not self._closed.is_set():
                self._events.put(LaneFailure("connection_error", f"Deepgram connection lost: {exc}"))
        finally:
            self._metadata.set()
            if not self._closed.is_set():
                self._events.put(LaneFailure("connection_error", "Deepgram closed the connection"))

    def _send(self, message: bytes | str) -> None:
        try:
            self._socket.send(message)
        except (WebSocketException, OSError) as exc:
            raise LaneFailure("connection_error", f"Deepgram connection lost: {exc}") from None

    def send(self, frame: bytes) -> None:
        with self._lock:
            if self._audio_since is None:
                self._audio_since = time.monotonic()
        self._send(frame)

    def keep_alive(self) -> None:
        with self._lock:
            self._audio_since = None  # no audio flows: silence from Deepgram is no stall
        self._send(json.dumps({"type": "KeepAlive"}))

    def finalize(self) -> None:
        self._send(json.dumps({"type": "Finalize"}))

    def events(self, timeout: float) -> list[Event]:
        found: list[Event] = []
        try:
            item = self._events.get(timeout=max(0.0, timeout))
            while True:
                if isinstance(item, LaneFailure):
                    raise item
                found.append(item)
                item = self._events.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            stalled = self._audio_since is not None and time.monotonic() - self._audio_since > STALL_SECONDS
        if stalled and not found:
            raise LaneFailure("timeout", f"Deepgram sent no result for {STALL_SECONDS:g} s of audio")
        return found

    def close(self) -> None:
        try:
            self._socket.send(json.dumps({"type": "CloseStream"}))
            self._metadata.wait(CLOSE_WAIT_SECONDS)
        except (WebSocketException, OSError):
            pass
        self._closed.set()
        self._socket.close()
        self._reader.join(CLOSE_WAIT_SECONDS)


class DeepgramRecognizer:
    """The StreamingRecognizer of a `deepgram-live` lane."""

    protocol = PROTOCOL

    def __init__(self, lane: SnapshotLane, *, endpoint: str, key: str) -> None:
        self.lane_id, self.endpoint, self._key = lane.id, endpoint, key
        model = lane_model(lane)
        self.model = DEFAULT_MODEL if model == lane.id else model

    def open(self, *, audio: CallAudio, language: str, keyterms: list[str]) -> DeepgramSession:
        url = listen_url(self.endpoint, model=self.model, audio=audio, language=language, keyterms=keyterms)
        socket = ws_connect(url, headers={"Authorization": f"Token {self._key}"}, vendor="Deepgram")
        return DeepgramSession(socket)


declare(ProtocolModule(
    protocol=PROTOCOL, capability="stt", default_endpoint="wss://api.deepgram.com", schemes=("wss", "ws"),
    make=lambda lane, endpoint, key, voice: DeepgramRecognizer(lane, endpoint=endpoint, key=key),
))
