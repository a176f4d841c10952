"""Fixed-window rate limits, exact across processes: `hit(bucket, limit=, window=)`.

Where the counts live:

- By default in the database (`RateLimitWindow`): one row per bucket and window,
  counted by a single `INSERT … ON CONFLICT DO UPDATE SET hits = hits + 1 RETURNING
  hits`. The statement is atomic on SQLite and PostgreSQL, so every process that
  shares the database (gunicorn's workers, several app servers on one database)
  counts into the same window and no two posts get the same count. Rows of windows
  that have ended are deleted whenever a bucket starts a new window.
- In the cache when `CACHE_URL` names a shared cache with atomic increments (Redis,
  Memcached): `cache.add` creates the window's counter and `cache.incr` counts, with
  no database write. The per-process `locmemcache://` and the read-then-write
  `dbcache://` are not used for counting, they would let through more than the limit.
"""
import hashlib
import math
import time
from functools import lru_cache

from django.conf import settings
from django.core.cache import cache
from django.db import connection

from leads_app.models import RateLimitWindow

BUCKET_LENGTH = RateLimitWindow._meta.get_field("bucket").max_length
# Cache backends whose counters every app server shares and whose `incr` is atomic.
SHARED_ATOMIC_CACHES = (
    "django.core.cache.backends.redis.RedisCache",
    "django_redis.cache.RedisCache",  # what CACHE_URL=redis://… names when django-redis is installed
    "django.core.cache.backends.memcached.PyMemcacheCache",
    "django.core.cache.backends.memcached.PyLibMCCache",
)


def hit(bucket, *, limit, window):
    """Counts one event in `bucket`. Returns None while within `limit` events per
    `window` seconds, else the seconds until the window ends (for `Retry-After`)."""
    if len(bucket) > BUCKET_LENGTH or not bucket.isascii():
        # e.g. a forwarded "address" that is none: a fixed-size key for the row and the cache
        bucket = "sha256:" + hashlib.sha256(bucket.encode("utf-8", "surrogatepass")).hexdigest()
    now = time.time()
    starts_at = int(now // window) * window
    ends_at = starts_at + window
    if settings.CACHES["default"]["BACKEND"] in SHARED_ATOMIC_CACHES:
        count = _count_in_cache(bucket, starts_at, window)
    else:
        count = _count_in_database(bucket, starts_at, ends_at, now)
    if count <= limit:
        return None
    return max(1, math.ceil(ends_at - now))


def _count_in_cache(bucket, starts_at, window):
    key = f"ratelimit:{bucket}:{starts_at}:{window}"
    # A little longer than the window, so a slow clock on one server cannot reuse it.
    cache.add(key, 0, timeout=window + 60)
    try:
        return cache.incr(key)
    except ValueError:
        # Evicted between add and incr (a full cache): start the window again.
        cache.add(key, 1, timeout=window + 60)
        return 1


def _count_in_database(bucket, starts_at, ends_at, now):
    with connection.cursor() as cursor:
        cursor.execute(_upsert_sql(connection.vendor), [bucket, starts_at, ends_at])
        count = cursor.fetchone()[0]
        if count == 1:
            # The bucket's first event of a window: a cheap moment to forget ended ones.
            RateLimitWindow.objects.filter(ends_at__lt=int(now)).delete()
    return count


@lru_cache(maxsize=None)
def _upsert_sql(vendor):
    """The counting statement (SQLite ≥ 3.35 and PostgreSQL share the syntax)."""
    quote = connection.ops.quote_name
    meta = RateLimitWindow._meta
    table = quote(meta.db_table)
    bucket, starts_at, ends_at, hits = (quote(meta.get_field(name).column)
                                        for name in ("bucket", "starts_at", "ends_at", "hits"))
    return (f"INSERT INTO {table} ({bucket}, {starts_at}, {ends_at}, {hits}) VALUES (%s, %s, %s, 1) "
            f"ON CONFLICT ({bucket}, {starts_at}) DO UPDATE SET {hits} = {table}.{hits} + 1 "
            f"RETURNING {hits}")
