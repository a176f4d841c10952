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
