"""Customer audio to 16 kHz mono PCM, decoded in process with PyAV.

The container format is recognised from the file's first bytes and FFmpeg is told
which demuxer to use. Letting FFmpeg probe arbitrary bytes would also allow its
playlist demuxers (HLS, concat), which open further files or URLs named inside an
upload; only the audio formats the contract accepts are ever opened.

Limits are enforced while decoding, not afterwards: a file that declares more than
ten minutes is refused before its first frame is decoded, and decoding stops as soon
as the output passes ten minutes (a small file can expand to hours of audio).
"""
import io
from dataclasses import dataclass

import av

from speech_app.errors import AudioTooLarge, UndecodableAudio

SAMPLE_RATE = 16000
MAX_AUDIO_BYTES = 10 * 1024 * 1024
MAX_AUDIO_SECONDS = 600
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
    except (AudioTooLarge, UndecodableAudio):
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
    resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
    out = bytearray()
    for frame in container.decode(stream):
        _append(out, resampler.resample(frame))
    _append(out, resampler.resample(None))  # flush the resampler
    return bytes(out)


def _append(out, frames):
    for frame in frames:
        # Packed s16 mono: the first plane holds the samples, possibly with padding.
        out += bytes(frame.planes[0])[: frame.samples * 2]
    if len(out) > MAX_AUDIO_SECONDS * SAMPLE_RATE * 2:
        raise AudioTooLarge(details={"maxSeconds": MAX_AUDIO_SECONDS})
