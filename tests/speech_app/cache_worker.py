"""A worker process of the cache concurrency test (tests/speech_app/test_cache.py).

A module of its own, without Django at import time: a spawned process imports it to
find its target, before Django is configured."""
import fcntl
import hashlib
import random
import time
from pathlib import Path


def key_of(tag, n):
    return hashlib.sha256(f"{tag}-{n}".encode()).hexdigest()


def render_many(location, max_bytes, tag, count, barrier, done):
    """`count` renders of 1-9 KB into the cache at `location`, each followed by a hit
    on an earlier one and a look at the whole cache under the writers' lock.

    Reports when it finished, its last key, the most bytes it saw and every MP3 or
    JSON it saw without its partner."""
    # The cache needs Django's settings for its storage, not the whole project: the
    # defaults of a bare configuration start in a fraction of the project's time.
    from django.conf import settings

    settings.configure()
    from django.core.files.storage import FileSystemStorage

    from speech_app.cache import FOLDER, USAGE_FILE, RenderCache, RenderedAudio

    cache = RenderCache(FileSystemStorage(location=location), max_bytes)
    rng = random.Random(tag)
    most, unpaired = 0, []
    barrier.wait(timeout=60)
    for n in range(count):
        key = key_of(tag, n)
        cache.get_or_render(key, lambda key=key: RenderedAudio(
            key=key, mp3=rng.randbytes(rng.randint(1000, 9000)), duration_sec=1.0))
        cache.get(key_of(tag, rng.randrange(n + 1)))
        with open(Path(location) / USAGE_FILE, "rb") as lock_file:
            # Between two writes (of either process): within the bound, every MP3 beside its JSON.
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            files = [path for path in (Path(location) / FOLDER).rglob("*") if path.is_file()]
            most = max(most, sum(path.stat().st_size for path in files))
            stems = [path.with_suffix("") for path in files]
            unpaired += [str(path) for path in files if stems.count(path.with_suffix("")) != 2]
    done.put((time.monotonic(), key_of(tag, count - 1), most, unpaired))
