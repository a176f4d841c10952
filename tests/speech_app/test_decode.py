import pytest

from speech_app import decode
from speech_app.decode import SAMPLE_RATE, container_of, decode_to_pcm
from speech_app.errors import AudioTooComplex, AudioTooLarge, UndecodableAudio
from tests.speech_app.audio_samples import FORMATS, encode, flac_silence, flac_without_length, tone, wav_file


@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_every_format_becomes_16_khz_mono_of_the_same_length(kind):
    decoded = decode_to_pcm(encode(tone(2.0, rate=22050), 22050, kind))
    assert decoded.duration_sec == pytest.approx(2.0, abs=0.06)
    assert len(decoded.pcm) % 2 == 0


def test_the_container_is_recognised_from_the_content_not_the_name():
    assert container_of(encode(tone(0.5), 16000, "webm")[:16]) == "matroska"
    assert container_of(encode(tone(0.5), 16000, "m4a")[:16]) == "mov"
    assert container_of(b"#EXTM3U\nhttp://example.com/a.ts") is None  # playlists are never opened
    assert container_of(b"ffconcat version 1.0\nfile '/etc/passwd'") is None


@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_decoding_stops_at_the_length_limit(monkeypatch, kind):
    monkeypatch.setattr(decode, "MAX_AUDIO_SECONDS", 1)
    with pytest.raises(AudioTooLarge):
        decode_to_pcm(encode(tone(3.0), 16000, kind))


def test_a_wav_of_unknown_length_is_read_to_its_end():
    audio = bytearray(wav_file(tone(1.0), rate=SAMPLE_RATE))
    data_chunk = audio.index(b"data")
    audio[data_chunk + 4:data_chunk + 8] = b"\xff\xff\xff\xff"  # as written by a live recorder
    assert decode_to_pcm(bytes(audio)).duration_sec == pytest.approx(1.0, abs=0.01)


def test_a_file_without_an_audio_stream_is_undecodable():
    with pytest.raises(UndecodableAudio):
        decode_to_pcm(b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00" + b"\x00" * 16)


def test_the_limits_are_inclusive_192_khz_and_8_channels_decode():
    assert decode_to_pcm(flac_silence(1.0, rate=192000, layout="7.1")).duration_sec == pytest.approx(1.0, abs=0.01)
    assert decode_to_pcm(wav_file(tone(1.0, rate=8000), rate=8000)).duration_sec == pytest.approx(1.0, abs=0.01)


def test_input_samples_are_counted_whatever_the_header_says(monkeypatch):
    # 30 s of 48 kHz stereo against a budget of 20 s: the header gives no length.
    monkeypatch.setattr(decode, "MAX_INPUT_SAMPLES", 20 * 48000 * 2)
    audio = flac_without_length(flac_silence(10, rate=48000, layout="stereo"), repeat=3)
    with pytest.raises(AudioTooLarge) as refused:
        decode_to_pcm(audio)
    assert refused.value.details["maxInputSamples"] == 20 * 48000 * 2
    monkeypatch.setattr(decode, "MAX_INPUT_SAMPLES", 40 * 48000 * 2)
    assert decode_to_pcm(audio).duration_sec == pytest.approx(30.0, abs=0.01)


def test_decoding_stops_at_the_cpu_deadline(settings):
    audio = encode(tone(20.0), 16000, "ogg")
    settings.SPEECH_DECODE_CPU_SECONDS = 0.001
    with pytest.raises(AudioTooComplex) as refused:
        decode_to_pcm(audio)
    assert refused.value.status == 422 and refused.value.details == {"maxCpuSeconds": 0.001}
    settings.SPEECH_DECODE_CPU_SECONDS = 5.0
    assert decode_to_pcm(audio).duration_sec == pytest.approx(20.0, abs=0.06)
