"""The agent's audio: the two wire formats, resampling, and end-of-utterance detection.

Recognition works on 16 kHz 16-bit mono PCM; the wire carries that, or 8 kHz G.711
(μ-law, what North American media streams carry; A-law, what European trunks carry),
or 8 kHz 16-bit PCM (Asterisk's AudioSocket). Everything here is plain numpy and
WebRTC's voice activity detector, so it runs in microseconds per frame."""
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy
import webrtcvad
from numpy.typing import NDArray

RATE = 16000  # what recognition and the detector work on
# What the browser's sessions may ask for (docs/api.md); the phone bridges also carry
# A-law and 8 kHz PCM (PHONE_FORMATS).
FORMATS = {("pcm_s16le", 16000), ("mulaw", 8000)}
PHONE_FORMATS = {("mulaw", 8000), ("alaw", 8000), ("pcm_s16le", 8000)}
# Frames the client may send: 20–200 ms of audio each; a longer one is refused.
MAX_FRAME_SEC = 0.2

_MULAW_BIAS, _MULAW_CLIP = 0x84, 32635
# Samples as numpy works on them (16-bit from the decoders, any numbers within).
Samples = NDArray[Any]


def _mulaw_decode_table() -> Samples:
    codes = ~numpy.arange(256, dtype=numpy.int32) & 0xFF
    sign, exponent, mantissa = codes & 0x80, (codes >> 4) & 0x07, codes & 0x0F
    magnitude = (((mantissa << 3) + _MULAW_BIAS) << exponent) - _MULAW_BIAS
    return numpy.where(sign != 0, -magnitude, magnitude).astype(numpy.int16)


_MULAW_TABLE = _mulaw_decode_table()


def mulaw_decode(data: bytes) -> Samples:
    return _MULAW_TABLE[numpy.frombuffer(data, dtype=numpy.uint8)]


def mulaw_encode(samples: Samples) -> bytes:
    samples = samples.astype(numpy.int32)
    sign = numpy.where(samples < 0, 0x80, 0)
    magnitude = numpy.minimum(numpy.abs(samples), _MULAW_CLIP) + _MULAW_BIAS
    exponent = numpy.floor(numpy.log2(magnitude)).astype(numpy.int32) - 7
    mantissa = (magnitude >> (exponent + 3)) & 0x0F
    return (~(sign | (exponent << 4) | mantissa) & 0xFF).astype(numpy.uint8).tobytes()


def _alaw_decode_table() -> Samples:
    codes = numpy.arange(256, dtype=numpy.int32) ^ 0x55
    sign, exponent, mantissa = codes & 0x80, (codes >> 4) & 0x07, codes & 0x0F
    magnitude = numpy.where(exponent == 0, (mantissa << 4) + 8, ((mantissa << 4) + 0x108) << (exponent - 1))
    return numpy.where(sign != 0, magnitude, -magnitude).astype(numpy.int16)


_ALAW_TABLE = _alaw_decode_table()


def alaw_decode(data: bytes) -> Samples:
    """G.711 A-law (ITU-T G.711, even bits inverted) to 16-bit samples."""
    return _ALAW_TABLE[numpy.frombuffer(data, dtype=numpy.uint8)]


def alaw_encode(samples: Samples) -> bytes:
    """16-bit samples to G.711 A-law: 13-bit magnitude, segment (exponent) and four
    mantissa bits, sign bit set for positive values, even bits inverted (0x55)."""
    samples = samples.astype(numpy.int32)
    sign = numpy.where(samples >= 0, 0x80, 0)
    magnitude = numpy.minimum(numpy.where(samples >= 0, samples, -samples - 1), 32767) >> 3  # 12 bits
    exponent = numpy.where(magnitude >= 32, numpy.floor(numpy.log2(numpy.maximum(magnitude, 1))).astype(
        numpy.int32) - 4, 0)
    mantissa = numpy.where(exponent == 0, magnitude >> 1, magnitude >> exponent) & 0x0F
    return ((sign | (exponent << 4) | mantissa) ^ 0x55).astype(numpy.uint8).tobytes()


_DECODERS: dict[str, Callable[[bytes], Samples]] = {"mulaw": mulaw_decode, "alaw": alaw_decode}
_ENCODERS: dict[str, Callable[[Samples], bytes]] = {"mulaw": mulaw_encode, "alaw": alaw_encode}


def _low_pass(samples: Samples, cutoff: float) -> Samples:
    """A windowed-sinc FIR low-pass (`cutoff` as a fraction of the sample rate): without
    it, downsampling folds the voice's upper harmonics back into the speech band."""
    taps = numpy.arange(-32, 33)
    kernel = 2 * cutoff * numpy.sinc(2 * cutoff * taps) * numpy.hamming(len(taps))
    return numpy.convolve(samples.astype(numpy.float32), kernel / kernel.sum(), mode="same")


def resample(samples: Samples, from_rate: int, to_rate: int) -> Samples:
    """Linear interpolation, low-passed first when the rate goes down: enough for speech
    going to a recogniser or a phone line."""
    if from_rate == to_rate or not len(samples):
        return samples
    if to_rate < from_rate:
        samples = _low_pass(samples, 0.45 * to_rate / from_rate)
    count = int(round(len(samples) * to_rate / from_rate))
    positions = numpy.arange(count) * (from_rate / to_rate)
    return numpy.interp(positions, numpy.arange(len(samples)), samples.astype(numpy.float32)).astype(numpy.int16)


@dataclass(frozen=True)
class WireFormat:
    encoding: str
    sample_rate: int

    @property
    def sample_bytes(self) -> int:
        return 2 if self.encoding == "pcm_s16le" else 1

    @property
    def bytes_per_second(self) -> int:
        return self.sample_rate * self.sample_bytes

    @property
    def max_frame_bytes(self) -> int:
        return int(self.bytes_per_second * MAX_FRAME_SEC)

    def seconds_of(self, data: bytes) -> float:
        return len(data) / self.bytes_per_second

    def whole(self, data: bytes) -> bool:
        """Whether `data` is a whole number of samples."""
        return self.encoding != "pcm_s16le" or len(data) % 2 == 0

    def to_pcm16k(self, data: bytes) -> bytes:
        """Wire audio as 16 kHz 16-bit PCM bytes."""
        if self.encoding == "pcm_s16le" and self.sample_rate == RATE:
            return data
        return resample(self.samples(data), self.sample_rate, RATE).astype("<i2").tobytes()

    def samples(self, data: bytes) -> Samples:
        """Wire audio as 16-bit samples at the wire's rate."""
        decode = _DECODERS.get(self.encoding)
        return decode(data) if decode else numpy.frombuffer(data, dtype="<i2")

    def from_pcm(self, pcm: bytes, sample_rate: int) -> bytes:
        """PCM of the synthesiser (any rate) in this wire format."""
        samples = resample(numpy.frombuffer(pcm, dtype="<i2"), sample_rate, self.sample_rate)
        encode = _ENCODERS.get(self.encoding)
        return encode(samples) if encode else samples.astype("<i2").tobytes()


@dataclass(frozen=True)
class PhoneWire(WireFormat):
    """A phone line's 8 kHz audio (the bridges'), widened for the recogniser by spectral
    folding instead of interpolation: every sample followed by a zero (gain 2), so the
    3.4 kHz band is mirrored into 4–8 kHz, where Whisper expects the fricatives a phone
    line cut off. A crude bandwidth extension, yet measured better than a clean
    interpolation on eSpeak's German: mean word error rate 0.51 against 0.59 over 24
    sentences in μ-law and A-law (16 kHz: 0.32; docs/performance-history.md, "Phone calls")."""

    def to_pcm16k(self, data: bytes) -> bytes:
        if self.sample_rate * 2 != RATE:
            return super().to_pcm16k(data)
        wide = numpy.zeros(len(data) // self.sample_bytes * 2, dtype=numpy.int32)
        wide[::2] = self.samples(data).astype(numpy.int32) * 2
        return wide.clip(-32768, 32767).astype("<i2").tobytes()


@dataclass(frozen=True)
class Utterance:
    pcm: bytes  # 16 kHz, with a little audio from before the speech began
    start: float  # seconds of the caller's audio since the session started
    end: float


@dataclass(frozen=True)
class Pause:
    """The caller fell silent during an utterance: maybe the end of the turn."""

    pcm: bytes  # the utterance so far, the silence included
    start: float  # the utterance's start, as in Utterance
    silence_sec: float  # how long the caller has been silent
    first: bool  # the first checkpoint of this pause (later ones ask again)


# What the Endpointer finds: ("start", seconds), ("pause", Pause), ("resume", seconds)
# or ("end", Utterance).
Event = tuple[str, Any]


class Endpointer:
    """Finds where the caller starts, pauses and stops speaking in a stream of 16 kHz PCM.

    WebRTC's detector classifies 30 ms frames. Speech starts when `ONSET` of the last
    `WINDOW` frames are voiced (about a tenth of a second: fast enough for barge-in
    within 300 ms, yet a click or a breath does not count). Unvoiced frames in a row are
    a pause: at each of `PAUSES` (frames of silence) a ("pause", Pause) event lets the
    conversation start recognising early and ask the end-of-turn model, and `end_now()`
    ends the utterance when that model says the caller finished; a voiced frame after
    a pause is ("resume", seconds). Without such a decision the utterance ends after
    `hangover` unvoiced frames in a row (`HANGOVER`, the fixed pause, unless the
    conversation sets a longer one). An utterance longer than `MAX_UTTERANCE_SEC` is cut
    there, so recognition never gets more than it can do in time."""

    FRAME = 480  # samples: 30 ms
    WINDOW, ONSET = 6, 4
    HANGOVER = 17  # ~0.5 s
    # Checkpoints of a pause, in frames of silence: 150 ms. Smart Turn is asked once, as
    # pipecat asks it: with more trailing silence it calls nearly every turn complete
    # (measured on our German speech: "Ich möchte gerne einen Termin für" 0.05–0.15 at
    # 150 ms, 0.93 at 390 ms), so a second question would cut a pausing caller off.
    PAUSES = (5,)
    PREROLL = 10  # frames kept from before the onset
    MAX_UTTERANCE_SEC = 15

    def __init__(self, aggressiveness: int = 2) -> None:
        self.vad = webrtcvad.Vad(aggressiveness)
        self.hangover = self.HANGOVER
        self.pending = b""
        self.frames_seen = 0
        self.voiced_frames = 0  # voiced frames of utterances so far (tells a caller when speech last came)
        self.recent: list[tuple[bool, bytes]] = []  # (voiced, frame) of the last frames before speech
        self.speech: list[bytes] | None = None  # frames of the utterance under way
        self.speech_start = 0.0
        self.silent_run = 0

    @property
    def speaking(self) -> bool:
        return self.speech is not None

    @property
    def paused(self) -> bool:
        """Whether the utterance under way is in a pause (past its first checkpoint)."""
        return self.speech is not None and self.silent_run >= self.PAUSES[0]

    @property
    def speech_sec(self) -> float:
        """Seconds of the utterance under way (0 without one)."""
        return len(self.speech) * self.FRAME / RATE if self.speech is not None else 0.0

    def so_far(self) -> bytes:
        """The utterance under way up to now (16 kHz PCM), or b""."""
        return b"".join(self.speech) if self.speech is not None else b""

    def feed(self, pcm: bytes) -> list[Event]:
        """Returns the events the audio completes: ("start", seconds), ("pause", Pause),
        ("resume", seconds) and ("end", Utterance)."""
        events: list[Event] = []
        self.pending += pcm
        size = self.FRAME * 2
        while len(self.pending) >= size:
            frame, self.pending = self.pending[:size], self.pending[size:]
            self.frames_seen += 1
            events.extend(self._frame(frame, self.vad.is_speech(frame, RATE)))
        return events

    def end_now(self) -> Utterance | None:
        """Ends the utterance under way at once, while it is in a pause (the end-of-turn
        model said the caller finished); its Utterance, or None."""
        if not self.paused:
            return None
        return self._end(self.frames_seen * self.FRAME / RATE)

    def _frame(self, frame: bytes, voiced: bool) -> list[Event]:
        now = self.frames_seen * self.FRAME / RATE
        if self.speech is None:
            self.recent = (self.recent + [(voiced, frame)])[-self.PREROLL:]
            if sum(v for v, _ in self.recent[-self.WINDOW:]) >= self.ONSET:
                self.speech = [f for _, f in self.recent]
                self.speech_start = now - len(self.speech) * self.FRAME / RATE
                self.silent_run, self.recent = 0, []
                self.voiced_frames += 1
                return [("start", now)]
            return []
        self.speech.append(frame)
        events: list[Event] = []
        if voiced:
            self.voiced_frames += 1
            if self.paused:
                events.append(("resume", now))
            self.silent_run = 0
        else:
            self.silent_run += 1
            if self.silent_run in self.PAUSES:
                events.append(("pause", Pause(pcm=b"".join(self.speech), start=round(self.speech_start, 2),
                                              silence_sec=self.silent_run * self.FRAME / RATE,
                                              first=self.silent_run == self.PAUSES[0])))
        if self.silent_run >= self.hangover or now - self.speech_start >= self.MAX_UTTERANCE_SEC:
            return [*events, ("end", self._end(now))]
        return events

    def _end(self, now: float) -> Utterance:
        assert self.speech is not None  # an utterance is under way
        pcm = b"".join(self.speech)
        spoken_end = now - self.silent_run * self.FRAME / RATE
        self.speech = None
        self.silent_run = 0
        return Utterance(pcm=pcm, start=round(self.speech_start, 2), end=round(spoken_end, 2))
