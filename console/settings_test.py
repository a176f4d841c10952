"""Settings of the test suite: the real settings with a fixed secret and fast hashing.

DATABASE_URL still comes from the environment, so the same suite runs on SQLite
(default) and on PostgreSQL (CI).
"""
import os
import tempfile

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production")
os.environ.setdefault("MEDIA_ROOT", tempfile.mkdtemp(prefix="stimmwerk-test-media-"))
os.environ.setdefault("STATIC_ROOT", tempfile.mkdtemp(prefix="stimmwerk-test-static-"))
os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="stimmwerk-test-var-"))

from console.settings import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405

# Calls (calls_app): the minute-cap race test sends real concurrent requests to a
# live server thread, which an in-memory SQLite database cannot show (the live
# server would share the test's one connection). A file in a fresh temporary
# directory lets each request thread open its own connection, as in production.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": os.path.join(tempfile.mkdtemp(prefix="stimmwerk-test-db-"), "test.sqlite3")
    }

# Jobs run inline in tests (django-q2's sync mode); tests of the real worker start
# `manage.py qcluster` themselves (tests/live_service.py).
Q_CLUSTER = {**Q_CLUSTER, "sync": True}  # noqa: F405
# The test receivers listen on loopback.
OUTBOUND_ALLOW_PRIVATE_TARGETS = True
# With REDIS_URL (CI's PostgreSQL run) the cache is Redis: each run counts under keys
# of its own, as with the per-process cache.
if CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache":  # noqa: F405
    CACHES["default"]["KEY_PREFIX"] = f"test-{os.getpid()}"  # noqa: F405
    # A test's `cache.clear()` is Redis's FLUSHDB, which empties a whole database: each
    # pytest-xdist worker takes a database of its own (1, 2, …), so it never empties
    # another worker's keys, nor those of the servers a test starts (REDIS_URL's own).
    _worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if _worker.startswith("gw"):
        from urllib.parse import urlsplit, urlunsplit

        _location = urlsplit(CACHES["default"]["LOCATION"])  # noqa: F405
        CACHES["default"]["LOCATION"] = urlunsplit(  # noqa: F405
            _location._replace(path=f"/{1 + int(_worker[2:]) % 15}"))
