"""Rendered speech in the audio formats of OpenAI's speech API (`POST /v1/audio/speech`,
docs/api.md): mp3, wav, pcm (raw 16-bit little-endian mono at 24 kHz, as OpenAI's),
opus (in Ogg), aac (ADTS) and flac, at a speed from 0.25 to 4.

A render's MP3 is decoded in process with PyAV (it is our own audio, bounded by the
render's length), its tempo changed by FFmpeg's `atempo` filter (the pitch kept), and
encoded again; MP3 at speed 1 is the render as it is.
"""
import io
from dataclasses import dataclass

import av

from speech_app.encode import mp3_from_pcm

# OpenAI's pcm: 24 kHz; the other formats are encoded at this rate too.
SPEECH_RATE = 24000
MIN_SPEED, MAX_SPEED = 0.25, 4.0
# atempo's narrowest factor per instance: slower speeds chain several.
_MIN_ATEMPO = 0.5


@dataclass(frozen=True)
class SpeechFormat:
    content_type: str
    container: str = ""  # PyAV's muxer; empty: raw PCM or MP3 (lameenc)
    codec: str = ""
    rate: int = SPEECH_RATE


SPEECH_FORMATS = {
    "mp3": SpeechFormat("audio/mpeg"),
    "opus": SpeechFormat("audio/ogg", "ogg", "libopus", 48000),
    "aac": SpeechFormat("audio/aac", "adts", "aac"),
    "flac": SpeechFormat("audio/flac", "flac", "flac"),
    "wav": SpeechFormat("audio/wav", "wav", "pcm_s16le"),
    "pcm": SpeechFormat("audio/pcm"),
}


def _tempo_filters(speed: float) -> list[str]:
    factors = []
    while speed < _MIN_ATEMPO:
        factors.append(_MIN_ATEMPO)
        speed /= _MIN_ATEMPO
    return [f"{factor:g}" for factor in [*factors, speed]]


def _pull_all(graph: av.filter.Graph, out: bytearray) -> None:
    while True:
        try:
            frame = graph.pull()
        except (av.error.BlockingIOError, av.error.EOFError):
            return
        assert isinstance(frame, av.AudioFrame)  # an audio graph
        out += bytes(frame.planes[0])[:frame.samples * 2]


def pcm_of_mp3(mp3: bytes, *, speed: float = 1.0, rate: int = SPEECH_RATE) -> bytes:
    """16-bit mono PCM at `rate` of an MP3, its tempo multiplied by `speed`."""
    out = bytearray()
    with av.open(io.BytesIO(mp3), "r", format="mp3") as container:
        stream = container.streams.audio[0]
        graph = av.filter.Graph()
        chain = [graph.add_abuffer(template=stream)]
        if speed != 1:
            chain += [graph.add("atempo", factor) for factor in _tempo_filters(speed)]
        chain += [graph.add("aformat", f"sample_fmts=s16:channel_layouts=mono:sample_rates={rate}"),
                  graph.add("abuffersink")]
        for source, target in zip(chain, chain[1:], strict=False):
            source.link_to(target)
        graph.configure()
        for frame in container.decode(stream):
            graph.push(frame)
            _pull_all(graph, out)
        graph.push(None)
        _pull_all(graph, out)
    return bytes(out)


def _encoded(pcm: bytes, spec: SpeechFormat) -> bytes:
    buffer = io.BytesIO()
    with av.open(buffer, "w", format=spec.container) as container:
        stream = container.add_stream(spec.codec, rate=spec.rate, layout="mono")
        assert isinstance(stream, av.AudioStream)  # an audio codec
        frame = av.AudioFrame(format="s16", layout="mono", samples=len(pcm) // 2)
        frame.planes[0].update(pcm)
        frame.sample_rate = SPEECH_RATE
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return buffer.getvalue()


def speech_in_format(mp3: bytes, *, response_format: str, speed: float = 1.0) -> bytes:
    """The rendered `mp3` as `response_format` (a key of SPEECH_FORMATS) at `speed`."""
    if response_format == "mp3" and speed == 1:
        return mp3
    pcm = pcm_of_mp3(mp3, speed=speed)
    if response_format == "pcm":
        return pcm
    if response_format == "mp3":
        return mp3_from_pcm(pcm, SPEECH_RATE)
    return _encoded(pcm, SPEECH_FORMATS[response_format])
