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
WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
TOOLS_ALLOW_PRIVATE_TARGETS = True
# With REDIS_URL (CI's PostgreSQL run) the cache is Redis: each run counts under keys
# of its own, as with the per-process cache.
if CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache":  # noqa: F405
    CACHES["default"]["KEY_PREFIX"] = f"test-{os.getpid()}"  # noqa: F405
