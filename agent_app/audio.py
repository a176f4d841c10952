"""The agent's audio: the two wire formats, resampling, and end-of-utterance detection.

Recognition works on 16 kHz 16-bit mono PCM; the wire carries either that or 8 kHz
μ-law (G.711, what telephony media streams carry). Everything here is plain numpy and
WebRTC's voice activity detector, so it runs in microseconds per frame."""
from dataclasses import dataclass

import numpy
import webrtcvad

RATE = 16000  # what recognition and the detector work on
FORMATS = {("pcm_s16le", 16000), ("mulaw", 8000)}
# Frames the client may send: 20–200 ms of audio each; a longer one is refused.
MAX_FRAME_SEC = 0.2

_MULAW_BIAS, _MULAW_CLIP = 0x84, 32635


def _mulaw_decode_table():
    codes = ~numpy.arange(256, dtype=numpy.int32) & 0xFF
    sign, exponent, mantissa = codes & 0x80, (codes >> 4) & 0x07, codes & 0x0F
    magnitude = (((mantissa << 3) + _MULAW_BIAS) << exponent) - _MULAW_BIAS
    return numpy.where(sign != 0, -magnitude, magnitude).astype(numpy.int16)


_MULAW_TABLE = _mulaw_decode_table()


def mulaw_decode(data):
    return _MULAW_TABLE[numpy.frombuffer(data, dtype=numpy.uint8)]


def mulaw_encode(samples):
    samples = samples.astype(numpy.int32)
    sign = numpy.where(samples < 0, 0x80, 0)
    magnitude = numpy.minimum(numpy.abs(samples), _MULAW_CLIP) + _MULAW_BIAS
    exponent = numpy.floor(numpy.log2(magnitude)).astype(numpy.int32) - 7
    mantissa = (magnitude >> (exponent + 3)) & 0x0F
    return (~(sign | (exponent << 4) | mantissa) & 0xFF).astype(numpy.uint8).tobytes()


def _low_pass(samples, cutoff):
    """A windowed-sinc FIR low-pass (`cutoff` as a fraction of the sample rate): without
    it, downsampling folds the voice's upper harmonics back into the speech band."""
    taps = numpy.arange(-32, 33)
    kernel = 2 * cutoff * numpy.sinc(2 * cutoff * taps) * numpy.hamming(len(taps))
    return numpy.convolve(samples.astype(numpy.float32), kernel / kernel.sum(), mode="same")


def resample(samples, from_rate, to_rate):
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
    def bytes_per_second(self):
        return self.sample_rate * (2 if self.encoding == "pcm_s16le" else 1)

    @property
    def max_frame_bytes(self):
        return int(self.bytes_per_second * MAX_FRAME_SEC)

    def seconds_of(self, data):
        return len(data) / self.bytes_per_second

    def whole(self, data):
        """Whether `data` is a whole number of samples."""
        return self.encoding != "pcm_s16le" or len(data) % 2 == 0

    def to_pcm16k(self, data):
        """Wire audio as 16 kHz 16-bit PCM bytes."""
        if self.encoding == "mulaw":
            return resample(mulaw_decode(data), self.sample_rate, RATE).tobytes()
        return data

    def from_pcm(self, pcm, sample_rate):
        """PCM of the synthesiser (any rate) in this wire format."""
        samples = resample(numpy.frombuffer(pcm, dtype="<i2"), sample_rate, self.sample_rate)
        return mulaw_encode(samples) if self.encoding == "mulaw" else samples.astype("<i2").tobytes()


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

    def __init__(self, aggressiveness=2):
        self.vad = webrtcvad.Vad(aggressiveness)
        self.hangover = self.HANGOVER
        self.pending = b""
        self.frames_seen = 0
        self.voiced_frames = 0  # voiced frames of utterances so far (tells a caller when speech last came)
        self.recent = []  # (voiced, frame) of the last frames before speech
        self.speech = None  # frames of the utterance under way
        self.speech_start = 0
        self.silent_run = 0

    @property
    def speaking(self):
        return self.speech is not None

    @property
    def paused(self):
        """Whether the utterance under way is in a pause (past its first checkpoint)."""
        return self.speech is not None and self.silent_run >= self.PAUSES[0]

    @property
    def speech_sec(self):
        """Seconds of the utterance under way (0 without one)."""
        return len(self.speech) * self.FRAME / RATE if self.speech is not None else 0.0

    def so_far(self):
        """The utterance under way up to now (16 kHz PCM), or b""."""
        return b"".join(self.speech) if self.speech is not None else b""

    def feed(self, pcm):
        """Returns the events the audio completes: ("start", seconds), ("pause", Pause),
        ("resume", seconds) and ("end", Utterance)."""
        events = []
        self.pending += pcm
        size = self.FRAME * 2
        while len(self.pending) >= size:
            frame, self.pending = self.pending[:size], self.pending[size:]
            self.frames_seen += 1
            events.extend(self._frame(frame, self.vad.is_speech(frame, RATE)))
        return events

    def end_now(self):
        """Ends the utterance under way at once, while it is in a pause (the end-of-turn
        model said the caller finished); its Utterance, or None."""
        if not self.paused:
            return None
        return self._end(self.frames_seen * self.FRAME / RATE)

    def _frame(self, frame, voiced):
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
        events = []
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

    def _end(self, now):
        pcm = b"".join(self.speech)
        spoken_end = now - self.silent_run * self.FRAME / RATE
        self.speech = None
        self.silent_run = 0
        return Utterance(pcm=pcm, start=round(self.speech_start, 2), end=round(spoken_end, 2))
