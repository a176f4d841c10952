"""Streaming speech beside the batch `Recognizer` and `Synthesizer`: what a provider that
hears while the caller speaks (Deepgram live) or speaks while the text still arrives
(Azure, ElevenLabs, Cartesia) is to the conversation core, and the one registry of
their wire protocols.

- A `StreamingRecognizer` opens a `RecognitionSession` per call: audio frames in, in the
  call's own encoding where the provider accepts it (`CallAudio`: 8 kHz A-law/μ-law from
  phone calls go through unconverted, 16 kHz PCM from the browser), `Heard` results out
  (interim and final, with word times) and the provider's `EndOfSpeech` events;
  `keep_alive` while the agent speaks, `finalize` at the turn's end, `close` at the
  call's end.
- A `StreamingSynthesizer` speaks one text as audio chunks in the call's encoding as
  they arrive (`SynthesisStream`), cancellable at barge-in (the provider's cancel, not
  only dropping bytes). An agent turn's sentences are spoken through a `SpeechTurn`
  (`open_turn`): a provider that keeps a turn in one context of its own (Cartesia: one
  `context_id` per turn, so that its prosody carries from one sentence to the next)
  hears them all there; the others speak each sentence on its own (`SentenceTurn`).

A voice-agent lane (speech to speech: `openai-realtime`) is the third kind of protocol
module; what it is to the conversation core is speech_app.voice_agent.

A lane's protocol is its registry entry's `params.protocol` (e.g. `deepgram-live`,
`azure-tts`, `openai-realtime`; the OpenAI audio API of speech_app.remote is `openai-audio`). A protocol
module is one file in speech_app/providers/ that calls `declare` when imported; every
file there is imported by `protocol_module` (declare once: a new provider is one new
file). Its endpoint is GATEWAY_ENDPOINT_<LANE> (the provider's base URL: scheme and host,
and a path prefix where a proxy needs one; the module adds the vendor's documented
path unless the URL already ends with it), else the module's documented default; its
key GATEWAY_KEY_<LANE>, as for chat lanes.

Failures are `LaneFailure`s (registry_app.lanes.failover), so that the lane loop's
cooldowns and the conversation core's fallback to the local engines treat them as they
treat a batch lane's: a connect error, a 4xx/5xx answer, or `STALL_SECONDS` without a
result while audio flows; for a synthesiser, `SYNTHESIS_STALL_SECONDS` without its first
audio or mid-answer.
"""
import contextlib
import importlib
import pkgutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol
from urllib.parse import urlsplit

from django.conf import settings
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException
from websockets.sync.client import ClientConnection, connect

from registry_app.lanes.config import lane_setting, lane_variable
from registry_app.lanes.failover import LaneFailure
from registry_app.lanes.plans import lane_model
from registry_app.snapshot import SnapshotLane
from speech_app.recognition import Word

if TYPE_CHECKING:  # speech_app.voice_agent builds on this module's CallAudio
    from speech_app.voice_agent import VoiceAgent

# The call's audio as a provider gets it: the encodings of phone calls and the browser.
Encoding = Literal["linear16", "mulaw", "alaw"]
ENCODINGS: tuple[Encoding, ...] = ("linear16", "mulaw", "alaw")
# Seconds without any result from a recogniser while audio flows to it: it has failed.
STALL_SECONDS = 2.0
# Seconds a synthesiser on a live call may take to connect, to send its first audio, or
# pause mid-answer: past them it has failed and the next lane (at last the local voice,
# eSpeak NG in a tenth of a second) speaks the sentence, so that the caller hears at
# most about 1.5 s of dead air (agent_app.conversation.speak).
SYNTHESIS_STALL_SECONDS = 1.0
# The protocol of the OpenAI audio API (speech_app.remote): batch, not streaming.
BATCH_PROTOCOL = "openai-audio"


@dataclass(frozen=True)
class CallAudio:
    """The audio of one call as it is sent to (or asked of) a provider."""

    encoding: Encoding
    sample_rate: int

    def __post_init__(self) -> None:
        if self.encoding not in ENCODINGS:
            raise ValueError(f"unknown encoding {self.encoding!r}")
        if self.encoding != "linear16" and self.sample_rate != 8000:
            raise ValueError("A-law and μ-law audio is 8 kHz")

    @property
    def bytes_per_second(self) -> int:
        return self.sample_rate * (2 if self.encoding == "linear16" else 1)


@dataclass(frozen=True)
class Heard:
    """A recogniser's result: `final` when the provider will not change it again;
    `speech_final` when the provider also decided the caller stopped speaking."""

    text: str
    final: bool
    speech_final: bool
    words: list[Word] = field(default_factory=list)
    start: float = 0.0  # seconds of the call's audio
    duration: float = 0.0


@dataclass(frozen=True)
class EndOfSpeech:
    """The provider's end-of-speech event (after a gap in the words, e.g. Deepgram's
    UtteranceEnd); `last_word_end` in seconds of the call's audio."""

    last_word_end: float


Event = Heard | EndOfSpeech


class RecognitionSession(Protocol):
    """One call's connection to a streaming recogniser."""

    def send(self, frame: bytes) -> None:
        """Audio in the session's CallAudio encoding; LaneFailure when the provider failed."""

    def keep_alive(self) -> None:
        """Keeps the connection while no audio is sent (the agent speaks)."""

    def finalize(self) -> None:
        """The turn ended: the provider answers what it holds as final at once."""

    def events(self, timeout: float) -> list[Event]:
        """The events that arrived, waiting at most `timeout` s for the first; LaneFailure
        when the connection failed or no result came for STALL_SECONDS while audio flowed."""

    def close(self) -> None:
        """The call ended: the provider flushes and closes; never raises."""


class StreamingRecognizer(Protocol):
    protocol: str
    lane_id: str

    def open(self, *, audio: CallAudio, language: str, keyterms: list[str]) -> RecognitionSession:
        """A session (connected); LaneFailure when the provider cannot be reached or refuses."""


class SynthesisStream(Protocol):
    def chunks(self) -> Iterator[bytes]:
        """The audio in the stream's CallAudio encoding as it arrives; LaneFailure on failure."""

    def cancel(self) -> None:
        """Barge-in: the provider stops (its cancel or the connection closed); never raises."""


class SpeechTurn(Protocol):
    """One agent turn at a synthesiser: its sentences in order, one at a time."""

    def speak(self, text: str) -> SynthesisStream:
        """Starts speaking the turn's next sentence; LaneFailure as StreamingSynthesizer.speak."""

    def close(self) -> None:
        """The turn's text is whole (or the turn was cut off): the provider may forget it;
        never raises."""


class StreamingSynthesizer(Protocol):
    protocol: str
    lane_id: str
    voice: str

    def speak(self, text: str, *, audio: CallAudio, language: str) -> SynthesisStream:
        """Starts speaking `text`; LaneFailure when the provider cannot be reached or refuses."""

    def open_turn(self, *, audio: CallAudio, language: str) -> SpeechTurn:
        """A turn whose sentences this synthesiser speaks (connecting when the first is spoken)."""


class LaneSynthesizer:
    """What every tts lane's synthesiser knows of its lane: its endpoint and key, its
    voice (the one named, else the lane's first of `params.voices`), its model (the
    lane's, else the protocol's `default_model`), and the longest text it is given.
    A turn is spoken sentence by sentence unless the protocol keeps a turn together."""

    protocol: str
    default_model: str = ""
    max_text_chars = 5000  # one sentence is far below this: a longer text is refused, not sent

    def __init__(self, lane: SnapshotLane, *, endpoint: str, key: str, voice: str) -> None:
        voices = lane_voices(lane)
        self.lane_id, self.endpoint, self._key = lane.id, endpoint, key
        self.voice = voice or (voices[0] if voices else "")
        if not self.voice:
            raise LaneFailure("unavailable", f"lane {lane.id} names no voice (params.voices)")
        model = lane_model(lane)
        self.model = self.default_model if model == lane.id else model

    def checked(self, text: str) -> str:
        """`text` as it is sent (without surrounding blanks); LaneFailure when too long."""
        if len(text) > self.max_text_chars:
            raise LaneFailure("unavailable", f"a text of more than {self.max_text_chars} characters")
        return text.strip()

    def speak(self, text: str, *, audio: CallAudio, language: str) -> SynthesisStream:
        raise NotImplementedError

    def open_turn(self, *, audio: CallAudio, language: str) -> SpeechTurn:
        return SentenceTurn(self, audio=audio, language=language)


class SentenceTurn(SpeechTurn):
    """A turn of a synthesiser that speaks every sentence on its own (a request or a
    connection each: Azure, ElevenLabs)."""

    def __init__(self, synthesizer: StreamingSynthesizer, *, audio: CallAudio, language: str) -> None:
        self._synthesizer, self._audio, self._language = synthesizer, audio, language

    def speak(self, text: str) -> SynthesisStream:
        return self._synthesizer.speak(text, audio=self._audio, language=self._language)

    def close(self) -> None:
        pass  # each sentence closed its own connection


@dataclass(frozen=True)
class ProtocolModule:
    """A provider's wire protocol as a protocol module declares it."""

    protocol: str
    capability: Literal["stt", "tts", "voice-agent"]
    default_endpoint: str  # the vendor's base URL (scheme and host)
    schemes: tuple[str, ...]  # the schemes of an endpoint it can call (wss/ws, https/http)
    # make(lane, endpoint, key, voice): the engine of a lane (voice: a tts lane's, "" for stt)
    make: Callable[[SnapshotLane, str, str, str], "StreamingRecognizer | StreamingSynthesizer | VoiceAgent"]


_PROTOCOLS: dict[str, ProtocolModule] = {}
_LOADED: list[bool] = []


def declare(module: ProtocolModule) -> None:
    """Called by a protocol module when imported; one protocol, one module."""
    known = _PROTOCOLS.get(module.protocol)
    if known is not None and known != module:
        raise RuntimeError(f"speech protocol {module.protocol!r} is declared twice")
    _PROTOCOLS[module.protocol] = module


def protocols() -> dict[str, ProtocolModule]:
    """Every protocol of speech_app/providers/, by name."""
    if not _LOADED:
        from speech_app import providers
        for found in pkgutil.iter_modules(providers.__path__):
            importlib.import_module(f"{providers.__name__}.{found.name}")
        _LOADED.append(True)
    return _PROTOCOLS


def lane_voices(lane: SnapshotLane) -> list[str]:
    """The voices a tts lane lists (`params.voices`), in its order."""
    return [name for name in (lane.entry.get("params") or {}).get("voices") or () if isinstance(name, str)]


def lane_protocol(lane: SnapshotLane) -> str:
    """A lane's wire protocol: its `params.protocol`, else the OpenAI audio API."""
    protocol = (lane.entry.get("params") or {}).get("protocol")
    return protocol if isinstance(protocol, str) and protocol else BATCH_PROTOCOL


def protocol_module(lane: SnapshotLane) -> ProtocolModule | None:
    """The streaming protocol module of a lane, None for a batch (openai-audio) lane;
    LaneFailure `unavailable` for a protocol no module declares."""
    protocol = lane_protocol(lane)
    if protocol == BATCH_PROTOCOL:
        return None
    module = protocols().get(protocol)
    if module is None:
        raise LaneFailure("unavailable", f"no module speaks protocol {protocol!r}")
    return module


def streaming_target(lane: SnapshotLane, module: ProtocolModule) -> tuple[str, str]:
    """(base URL, key) of a streaming lane: GATEWAY_ENDPOINT_<LANE> or the module's
    default, GATEWAY_KEY_<LANE>; LaneFailure `unavailable`/`no_key` when unusable."""
    endpoint = (lane_setting(lane.id, "ENDPOINT") or module.default_endpoint).rstrip("/")
    if urlsplit(endpoint).scheme not in module.schemes or not urlsplit(endpoint).hostname:
        raise LaneFailure("unavailable", f"{lane_variable(lane.id, 'ENDPOINT')} must be a "
                                         f"{'/'.join(module.schemes)} URL for protocol {module.protocol}")
    key = lane_setting(lane.id, "KEY")
    if not key:
        raise LaneFailure("no_key", f"no key: set {lane_variable(lane.id, 'KEY')}")
    return endpoint, key


def streaming_engine(lane: SnapshotLane, *, voice: str = "") -> "StreamingRecognizer | StreamingSynthesizer | VoiceAgent":
    """The streaming engine of a lane whose protocol streams; LaneFailure when it cannot be called."""
    module = protocol_module(lane)
    if module is None:
        raise LaneFailure("unavailable", f"lane {lane.id} speaks the batch protocol {BATCH_PROTOCOL}")
    if module.capability != lane.capability:
        raise LaneFailure("unavailable", f"protocol {module.protocol} is {module.capability}, lane {lane.id} "
                                         f"is {lane.capability}")
    endpoint, key = streaming_target(lane, module)
    return module.make(lane, endpoint, key, voice)


# --- WebSocket providers (Deepgram, ElevenLabs, Cartesia) -------------------------------

def ws_connect(url: str, *, headers: dict[str, str], vendor: str, open_timeout: float | None = None) -> ClientConnection:
    """A WebSocket to a provider (opened within `open_timeout`, else GATEWAY_TIMEOUT_SEC: a
    synthesiser gives SYNTHESIS_STALL_SECONDS, the caller waits on it); its refusal as a
    LaneFailure that names the vendor and the HTTP status (a wrong key: `rejected`,
    "… refused the connection with HTTP 401")."""
    try:
        with contextlib.ExitStack() as stack:  # entered as websockets wants, closed by the caller
            socket = stack.enter_context(connect(url, additional_headers=headers,
                                                 open_timeout=open_timeout or settings.GATEWAY_TIMEOUT_SEC,
                                                 max_size=2 ** 22))
            stack.pop_all()
    except InvalidStatus as exc:
        status = exc.response.status_code
        refused = ": the key was refused" if status in (401, 403) else ""
        raise LaneFailure(http_outcome(status), f"{vendor} refused the connection with HTTP {status}{refused}",
                          status=status) from None
    except TimeoutError:
        raise LaneFailure("timeout", f"{vendor} did not accept the connection in time") from None
    except (WebSocketException, OSError) as exc:
        raise LaneFailure("connection_error", f"{vendor} cannot be reached: {exc}") from None
    return socket


def http_outcome(status: int) -> str:
    """The LaneFailure outcome of a provider's HTTP(-like) error status."""
    return "rate_limited" if status == 429 else "server_error" if status >= 500 else "rejected"


# A provider's message as a speech stream reads it: (audio, whether the answer is whole).
Parsed = tuple[bytes, bool]


class SocketSpeech(SynthesisStream):
    """The audio of one synthesis over a provider's WebSocket: `parse` turns each message
    into (audio, done) or raises a LaneFailure (the provider's error message); a normal
    close after audio also ends the answer (ElevenLabs closes after its last audio). The first
    audio must come within SYNTHESIS_STALL_SECONDS of the stream's start, the next within
    as long of the last (so that the next lane speaks while the caller's dead air is
    short), all of it within GATEWAY_DEADLINE_SEC. `cancel` (barge-in) sends the
    provider's cancel message where it has one (`cancel_message`), then closes the
    connection, which stops a provider without one. A connection a turn speaks its next
    sentences on (`keep_open`) stays open after a whole answer, never after a failure."""

    def __init__(self, socket: ClientConnection, *, vendor: str, parse: Callable[[str | bytes], Parsed],
                 cancel_message: str | None = None, keep_open: bool = False) -> None:
        self._socket, self._vendor, self._parse = socket, vendor, parse
        self._cancel_message, self._keep_open = cancel_message, keep_open
        self._finished = self._cancelled = False
        started = time.monotonic()
        self._first_by = started + SYNTHESIS_STALL_SECONDS
        self._ends_by = started + settings.GATEWAY_DEADLINE_SEC

    def chunks(self) -> Iterator[bytes]:
        given = False
        try:
            while not self._finished:
                now = time.monotonic()
                wait = min(now + SYNTHESIS_STALL_SECONDS if given else self._first_by, self._ends_by) - now
                if wait <= 0:
                    raise LaneFailure("timeout", f"{self._vendor} sent no audio in time")
                try:
                    raw = self._socket.recv(timeout=wait)
                except TimeoutError:
                    raise LaneFailure("timeout", f"{self._vendor} sent no audio for {wait:.1f} s") from None
                except ConnectionClosed as exc:
                    if self._cancelled:
                        return
                    if given and exc.rcvd is not None and exc.rcvd.code == 1000:
                        self._finished = True  # a normal close after the audio: the answer is whole
                        return
                    raise LaneFailure(*self._closed(exc)) from None
                except (WebSocketException, OSError) as exc:
                    if self._cancelled:
                        return
                    raise LaneFailure("connection_error", f"{self._vendor} connection lost: {exc}") from None
                audio, self._finished = self._parse(raw)
                if audio:
                    given = True
                    yield audio
        except LaneFailure:
            self._finished, self._keep_open = True, False  # nothing to cancel any more: closed below
            raise
        finally:
            if self._finished and not self._keep_open:
                self._socket.close()

    def _closed(self, exc: ConnectionClosed) -> tuple[str, str]:
        """(outcome, detail) of a connection the provider closed before the answer was whole."""
        close = exc.rcvd
        if close is None:
            return "connection_error", f"{self._vendor} connection lost"
        if close.code == 1000:
            return "bad_response", f"{self._vendor} closed the connection without audio"
        # 1008 (policy violation) is how providers close on a bad key or request; 1011 a server error.
        outcome = "server_error" if close.code in (1011, 1013, 1014) else (
            "rejected" if close.code in (1003, 1007, 1008, 1009) or 4000 <= close.code < 5000 else "connection_error")
        return outcome, f"{self._vendor} closed the connection ({close.code}{': ' + close.reason if close.reason else ''})"

    def cancel(self) -> None:
        if self._finished or self._cancelled:
            return
        self._cancelled = True
        if self._cancel_message is not None:
            with contextlib.suppress(WebSocketException, OSError):
                self._socket.send(self._cancel_message)
        self._socket.close()
