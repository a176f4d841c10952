"""Fixed-window rate limits counted in Django's cache.

The counter of a window is created with `cache.add` and counted with `cache.incr`,
which are atomic in Redis and Memcached: with `CACHE_URL` pointing at one of those,
every app server counts into the same window and the limit holds for the whole
service. The default local-memory cache counts per process (each gunicorn worker
has its own counters). `dbcache://` is shared too, but its `incr` is a read and a
write, so a burst of simultaneous posts can be under-counted by a few.
"""
import math
import time

from django.core.cache import cache


def hit(bucket, *, limit, window):
    """Counts one event in `bucket`. Returns None while within `limit` events per
    `window` seconds, else the seconds until the window ends (for `Retry-After`)."""
    now = time.time()
    window_index = int(now // window)
    key = f"ratelimit:{bucket}:{window}:{window_index}"
    # A little longer than the window, so a slow clock on one server cannot reuse it.
    cache.add(key, 0, timeout=window + 60)
    try:
        count = cache.incr(key)
    except ValueError:
        # Evicted between add and incr (a full cache): start the window again.
        cache.add(key, 1, timeout=window + 60)
        count = 1
    if count <= limit:
        return None
    return max(1, math.ceil((window_index + 1) * window - now))
