import pytest

from speech_app import decode
from speech_app.decode import SAMPLE_RATE, container_of, decode_to_pcm
from speech_app.errors import AudioTooLarge, UndecodableAudio
from tests.speech_app.audio_samples import FORMATS, encode, tone, wav_file


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
