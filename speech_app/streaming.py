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
  only dropping bytes).

A lane's protocol is its registry entry's `params.protocol` (e.g. `deepgram-live`,
`azure-tts`; the OpenAI audio API of speech_app.remote is `openai-audio`). A protocol
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
import importlib
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal, Protocol
from urllib.parse import urlsplit

from registry_app.lanes.config import lane_setting, lane_variable
from registry_app.lanes.failover import LaneFailure
from registry_app.snapshot import SnapshotLane
from speech_app.recognition import Word

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


class StreamingSynthesizer(Protocol):
    protocol: str
    lane_id: str
    voice: str

    def speak(self, text: str, *, audio: CallAudio, language: str) -> SynthesisStream:
        """Starts speaking `text`; LaneFailure when the provider cannot be reached or refuses."""


@dataclass(frozen=True)
class ProtocolModule:
    """A provider's wire protocol as a protocol module declares it."""

    protocol: str
    capability: Literal["stt", "tts"]
    default_endpoint: str  # the vendor's base URL (scheme and host)
    schemes: tuple[str, ...]  # the schemes of an endpoint it can call (wss/ws, https/http)
    # make(lane, endpoint, key, voice): the engine of a lane (voice: a tts lane's, "" for stt)
    make: Callable[[SnapshotLane, str, str, str], StreamingRecognizer | StreamingSynthesizer]


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


def streaming_engine(lane: SnapshotLane, *, voice: str = "") -> StreamingRecognizer | StreamingSynthesizer:
    """The streaming engine of a lane whose protocol streams; LaneFailure when it cannot be called."""
    module = protocol_module(lane)
    if module is None:
        raise LaneFailure("unavailable", f"lane {lane.id} speaks the batch protocol {BATCH_PROTOCOL}")
    if module.capability != lane.capability:
        raise LaneFailure("unavailable", f"protocol {module.protocol} is {module.capability}, lane {lane.id} "
                                         f"is {lane.capability}")
    endpoint, key = streaming_target(lane, module)
    return module.make(lane, endpoint, key, voice)
