"""Customer audio to 16 kHz mono PCM, decoded in process with PyAV.

The container format is recognised from the file's first bytes and FFmpeg is told
which demuxer to use. Letting FFmpeg probe arbitrary bytes would also allow its
playlist demuxers (HLS, concat), which open further files or URLs named inside an
upload; only the audio formats the contract accepts are ever opened.

Limits are enforced while decoding, not afterwards, because a small file can expand
to hours of audio and a header's length can be zeroed or false (a 455 KB FLAC of
655,350 Hz × 8 channels with its length field zeroed kept a worker busy past its
timeout; docs/performance.md, Hostile speech inputs):
- a stream whose codec announces a sample rate outside 8–192 kHz or more than eight
  channels is refused before its first frame is decoded, and so is every frame that
  changes to such a format midway;
- a file that declares more than ten minutes is refused before decoding;
- the decoded input samples (frame samples × channels, whatever the header said) are
  counted frame by frame and decoding stops once they pass the budget of ten minutes
  of 48 kHz stereo; the output stops at ten minutes of 16 kHz mono;
- decoding stops at a CPU-time deadline (SPEECH_DECODE_CPU_SECONDS), measured on the
  decoding thread, for whatever the counts above do not foresee.
"""
import io
import time
from dataclasses import dataclass

import av
from django.conf import settings

from console.errors import ApiError
from speech_app.errors import AudioTooComplex, AudioTooLarge, UndecodableAudio, UnsupportedAudio

SAMPLE_RATE = 16000
MAX_AUDIO_BYTES = 10 * 1024 * 1024
MAX_AUDIO_SECONDS = 600
MAX_SAMPLE_RATE = 192000
# Below telephone quality nothing is left to recognise, and resampling up to 16 kHz
# multiplies the samples: one 4,096-sample frame at 1 Hz became 65 million samples.
MIN_SAMPLE_RATE = 8000
MAX_CHANNELS = 8
# Ten minutes of 48 kHz stereo, counted over all channels.
MAX_INPUT_SAMPLES = MAX_AUDIO_SECONDS * 48000 * 2
# A file that declares its length (WebM and M4A indexes, an MP3's Xing/Info header)
# but yields less audio than that is truncated. The slack covers encoder priming and
# padding (tens of milliseconds). A stream cut at a frame or page boundary without
# such a declaration (plain MP3, OGG) cannot be told from a shorter recording.
_TRUNCATION_SLACK_SEC = 0.25
_TRUNCATION_SLACK_RATIO = 0.02


@dataclass(frozen=True)
class DecodedAudio:
    pcm: bytes  # 16-bit signed little-endian mono at SAMPLE_RATE
    container: str

    @property
    def duration_sec(self):
        return len(self.pcm) / 2 / SAMPLE_RATE


def container_of(head):
    """The FFmpeg demuxer for a file starting with `head`, or None if not accepted."""
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "wav"
    if head[:4] == b"OggS":
        return "ogg"
    if head[:4] == b"\x1a\x45\xdf\xa3":  # EBML: WebM and Matroska
        return "matroska"
    if head[4:8] == b"ftyp":  # ISO media: M4A, MP4, 3GP
        return "mov"
    if head[:4] == b"fLaC":
        return "flac"
    if head[:3] == b"ID3":
        return "mp3"
    if len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0:
        # MPEG audio frame sync; layer bits 00 mark ADTS AAC, anything else MP3.
        return "aac" if head[1] & 0x06 == 0 else "mp3"
    return None


def decode_to_pcm(data):
    """DecodedAudio of `data`; UndecodableAudio or AudioTooLarge otherwise."""
    if len(data) > MAX_AUDIO_BYTES:
        raise AudioTooLarge(details={"bytes": len(data), "maxBytes": MAX_AUDIO_BYTES})
    container_name = container_of(data[:16])
    if container_name is None:
        raise UndecodableAudio("This is not audio in a supported format: send MP3, WAV, OGG/Opus, WebM or M4A.")
    if container_name == "wav" and _wav_data_missing(data):
        raise UndecodableAudio("The WAV file is truncated: its header declares more audio than it holds.")
    try:
        with av.open(io.BytesIO(data), mode="r", format=container_name) as container:
            pcm = _decode(container)
            declared = _declared_seconds(container) if _declares_length(container_name, data) else None
    except ApiError:
        raise
    except (av.FFmpegError, ValueError, IndexError, OSError, MemoryError) as exc:
        raise UndecodableAudio(f"The audio could not be decoded ({type(exc).__name__}); "
                               "it is damaged, truncated or not in a supported format.") from None
    decoded = DecodedAudio(pcm=pcm, container=container_name)
    if not pcm:
        raise UndecodableAudio("The file contains no audio samples.")
    if declared and decoded.duration_sec < declared * (1 - _TRUNCATION_SLACK_RATIO) - _TRUNCATION_SLACK_SEC:
        raise UndecodableAudio(
            f"The audio is truncated: the file declares {declared:.1f} s but holds {decoded.duration_sec:.1f} s.")
    return decoded


def _declares_length(container_name, data):
    if container_name in ("matroska", "mov"):
        return True
    if container_name == "mp3":
        # FFmpeg takes an MP3's length from its Xing/Info header when there is one,
        # otherwise it estimates it from the size (which a truncated file shrinks too).
        start = 10 + _syncsafe(data[6:10]) if data[:3] == b"ID3" else 0
        head = data[start:start + 64]
        return b"Xing" in head or b"Info" in head
    return False


def _syncsafe(four_bytes):
    value = 0
    for byte in four_bytes:
        value = (value << 7) | (byte & 0x7F)
    return value


def _wav_data_missing(data):
    """Whether a WAV's `data` chunk declares more bytes than the file holds."""
    position = 12
    while position + 8 <= len(data):
        chunk_id, size = data[position:position + 4], int.from_bytes(data[position + 4:position + 8], "little")
        if chunk_id == b"data":
            # 0 and 0xFFFFFFFF mark WAVs written as a stream, with unknown length.
            return size not in (0, 0xFFFFFFFF) and len(data) - position - 8 < size
        position += 8 + size + (size & 1)
    return False


def _declared_seconds(container):
    if container.duration and container.duration > 0:
        return container.duration / av.time_base
    return None


def _decode(container):
    if not container.streams.audio:
        raise UndecodableAudio("The file has no audio stream.")
    declared = _declared_seconds(container)
    if declared and declared > MAX_AUDIO_SECONDS:
        raise AudioTooLarge(details={"durationSec": round(declared, 1), "maxSeconds": MAX_AUDIO_SECONDS})
    stream = container.streams.audio[0]
    codec = stream.codec_context
    if codec is None:  # FFmpeg found the stream but no decoder for what it holds
        raise UndecodableAudio("The audio stream has no codec that can be decoded.")
    # What the header announces is checked before any decoding (FFmpeg takes absurd
    # rates such as 2,147,483,647 Hz from a WAV header as they are).
    _check_format(codec.sample_rate, codec.layout.nb_channels, announced=True)
    budget = _Budget(settings.SPEECH_DECODE_CPU_SECONDS)
    resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
    out = bytearray()
    for frame in container.decode(stream):
        channels = frame.layout.nb_channels
        _check_format(frame.sample_rate, channels)
        budget.spend(frame.samples * channels)
        _append(out, resampler.resample(frame))
    _append(out, resampler.resample(None))  # flush the resampler
    return bytes(out)


def _check_format(sample_rate, channels, announced=False):
    """UnsupportedAudio for a sample rate or channel count outside the limits.

    A codec that does not know its format before the first frame announces 0; the
    frames are checked again as they come."""
    if announced and not sample_rate:
        sample_rate = None
    if sample_rate is not None and not MIN_SAMPLE_RATE <= sample_rate <= MAX_SAMPLE_RATE:
        raise UnsupportedAudio(
            f"The audio's sample rate is {sample_rate} Hz; {MIN_SAMPLE_RATE} to {MAX_SAMPLE_RATE} Hz are accepted.",
            details={"sampleRate": sample_rate, "minSampleRate": MIN_SAMPLE_RATE, "maxSampleRate": MAX_SAMPLE_RATE})
    if channels > MAX_CHANNELS:
        raise UnsupportedAudio(f"The audio has {channels} channels; at most {MAX_CHANNELS} are accepted.",
                               details={"channels": channels, "maxChannels": MAX_CHANNELS})


class _Budget:
    """What one decoding may spend: input samples and CPU time of this thread."""

    def __init__(self, cpu_seconds):
        self.cpu_seconds = cpu_seconds
        self.samples = 0
        # Thread time, not wall time: a busy machine slows a decoding down without
        # making the file any more expensive, and only this thread decodes it.
        self.started = time.thread_time()

    def spend(self, samples):
        self.samples += samples
        if self.samples > MAX_INPUT_SAMPLES:
            raise AudioTooLarge(
                f"The audio holds more than {MAX_INPUT_SAMPLES:,} samples (ten minutes of 48 kHz stereo).",
                details={"maxInputSamples": MAX_INPUT_SAMPLES, "maxSeconds": MAX_AUDIO_SECONDS})
        if time.thread_time() - self.started > self.cpu_seconds:
            raise AudioTooComplex(
                f"Decoding the audio took more than {self.cpu_seconds:g} CPU seconds.",
                details={"maxCpuSeconds": self.cpu_seconds})


def _append(out, frames):
    for frame in frames:
        # Packed s16 mono: the first plane holds the samples, possibly with padding.
        out += bytes(frame.planes[0])[: frame.samples * 2]
    if len(out) > MAX_AUDIO_SECONDS * SAMPLE_RATE * 2:
        raise AudioTooLarge(details={"maxSeconds": MAX_AUDIO_SECONDS})
