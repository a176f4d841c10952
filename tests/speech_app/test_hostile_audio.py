"""A worker survives a long run of malformed uploads: each is a clear client error
(or, for damage a decoder can conceal, a normal answer), never a crash, a hang or a
growing process."""
import random

import pytest

from tests.conftest import error_of, make_client
from tests.speech_app.audio_samples import FORMATS, encode, tone
from tests.speech_app.conftest import KOREAN_PHRASES, korean_mp3

pytestmark = pytest.mark.django_db


def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def malformed_uploads(count, seed=4):
    rng = random.Random(seed)
    samples = {kind: encode(tone(1.0), 16000, kind) for kind in FORMATS}
    heads = [b"RIFF\xff\xff\xff\x7fWAVEfmt ", b"OggS\x00\x02", b"\x1a\x45\xdf\xa3\x01\x00\x00\x00",
             b"\x00\x00\x00\x18ftypM4A ", b"ID3\x04\x00\x00\x7f\x7f\x7f\x7f", b"\xff\xfb\x90\x64", b"\xff\xf1\x50\x80"]
    for n in range(count):
        kind = rng.choice(sorted(samples))
        sample = samples[kind]
        style = n % 4
        if style == 0:  # random bytes, sometimes behind a real magic number
            body = rng.choice(heads + [b""]) + rng.randbytes(rng.randint(1, 4096))
        elif style == 1:  # a real file cut anywhere
            body = sample[: rng.randint(1, len(sample) - 1)]
        elif style == 2:  # a real file with bytes overwritten
            body = bytearray(sample)
            for _ in range(rng.randint(1, 40)):
                body[rng.randrange(len(body))] = rng.randrange(256)
            body = bytes(body)
        else:  # a real header followed by another format's body
            other = samples[rng.choice(sorted(samples))]
            body = sample[:64] + other[64:]
        yield body


def test_a_worker_survives_200_malformed_uploads_in_a_row(key_a, korean_model):
    module = make_client(key_a)
    url = "/api/voice/transcribe?language=ko&" + "&".join(f"phrase={p}" for p in KOREAN_PHRASES)
    module.generic("POST", url, korean_mp3("서울"), content_type="audio/mpeg")  # model and engines loaded
    baseline = resident_bytes()
    statuses = []
    for body in malformed_uploads(200):
        response = module.generic("POST", url, body, content_type="application/octet-stream")
        statuses.append(response.status_code)
        if response.status_code != 200:
            assert error_of(response)["code"] in {"undecodable_audio", "empty_audio", "audio_too_large"}
    assert set(statuses) <= {200, 400, 413, 422}
    assert statuses.count(422) >= 100  # most of it is refused, not guessed at
    # Still healthy: the next real upload is heard, and the process has not grown
    # beyond a generous bound (keeping every upload's decoder state would pass it).
    response = module.generic("POST", url, korean_mp3("부산 서울"), content_type="audio/mpeg")
    assert response.json()["text"] == "부산 서울"
    assert resident_bytes() - baseline < 150 * 1024 * 1024
