"""MP3 encoding in process with LAME (lameenc); no system ffmpeg."""
import importlib.metadata

import lameenc

# 64 kbit/s mono is plenty for synthetic speech. LAME's quality 7 ("fast") encodes
# several times faster than its best setting (docs/performance-history.md) with no
# audible difference on eSpeak's output.
BIT_RATE_KBPS = 64
LAME_QUALITY = 7
ENCODER_VERSION = f"lameenc-{importlib.metadata.version('lameenc')}/{BIT_RATE_KBPS}k/q{LAME_QUALITY}"


def mp3_from_pcm(pcm, sample_rate):
    """MP3 bytes of 16-bit mono PCM."""
    encoder = lameenc.Encoder()
    encoder.set_bit_rate(BIT_RATE_KBPS)
    encoder.set_in_sample_rate(sample_rate)
    encoder.set_channels(1)
    encoder.set_quality(LAME_QUALITY)
    return bytes(encoder.encode(pcm) + encoder.flush())
