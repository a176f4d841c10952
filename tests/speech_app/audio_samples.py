"""Audio files for the tests, made in process: speech from the real engine, encoded
with PyAV into every accepted container format."""
import io
import math
import struct
import wave

import av

# container format, codec, sample rate of the encoded stream
FORMATS = {
    "wav": ("wav", "pcm_s16le", 16000),
    "ogg": ("ogg", "libopus", 48000),
    "webm": ("webm", "libopus", 48000),
    "m4a": ("ipod", "aac", 44100),
    "mp3": ("mp3", "libmp3lame", 22050),
    "flac": ("flac", "flac", 16000),
}


def silence(seconds, rate=16000):
    return b"\x00\x00" * int(seconds * rate)


def tone(seconds, rate=16000, hz=440):
    return b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * hz * i / rate)))
                    for i in range(int(seconds * rate)))


def encode(pcm, rate, kind):
    """16-bit mono PCM at `rate` as a file of `kind` (a key of FORMATS)."""
    container_format, codec, out_rate = FORMATS[kind]
    buffer = io.BytesIO()
    with av.open(buffer, "w", format=container_format) as container:
        stream = container.add_stream(codec, rate=out_rate, layout="mono")
        resampler = av.AudioResampler(format=stream.codec_context.format.name, layout="mono", rate=out_rate)
        step = rate // 10
        for offset in range(0, len(pcm), step * 2):
            chunk = pcm[offset:offset + step * 2]
            frame = av.AudioFrame(format="s16", layout="mono", samples=len(chunk) // 2)
            frame.planes[0].update(chunk)
            frame.sample_rate = rate
            for converted in resampler.resample(frame):
                container.mux(stream.encode(converted))
        for converted in resampler.resample(None):
            container.mux(stream.encode(converted))
        container.mux(stream.encode(None))
    return buffer.getvalue()


def wav_file(frames, *, rate, sample_width=2, channels=1):
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(channels)
        wav.setsampwidth(sample_width)
        wav.setframerate(rate)
        wav.writeframes(frames)
    return buffer.getvalue()


def flac_silence(seconds, *, rate, layout):
    """FLAC of digital silence, which FLAC stores in a few bytes per frame."""
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="flac") as container:
        stream = container.add_stream("flac", rate=rate, layout=layout)
        frame = av.AudioFrame(format="s16", layout=layout, samples=rate // 10)
        for plane in frame.planes:
            plane.update(bytes(plane.buffer_size))
        frame.sample_rate = rate
        for _ in range(round(seconds * 10)):
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return buffer.getvalue()


def flac_without_length(flac, *, repeat=1):
    """`flac` with its STREAMINFO length field zeroed ("unknown", as a live encoder
    writes it) and its audio frames repeated `repeat` times: every frame stays valid,
    so the file decodes to `repeat` times the audio without saying so anywhere."""
    position = 4  # after "fLaC": metadata blocks, the last one flagged in its first bit
    while True:
        last, size = flac[position] & 0x80, int.from_bytes(flac[position + 1:position + 4], "big")
        position += 4 + size
        if last:
            break
    header = bytearray(flac[:position])
    # STREAMINFO starts at byte 8; its 36-bit sample count ends 18 bytes in.
    header[21] &= 0xF0
    header[22:26] = bytes(4)
    return bytes(header) + flac[position:] * repeat
