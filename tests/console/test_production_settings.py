"""Production settings come from the environment: HTTPS_ONLY=1 passes Django's deploy
checks without a warning, the defaults serve plain http on loopback (`make run`)."""
import json
import os
import secrets
import subprocess
import sys

import pytest
from django.conf import settings
from django.test import Client

PRODUCTION = {"DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "console.example.com",
              "HTTPS_ONLY": "1", "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto"}
SECURITY_SETTINGS = ["SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS",
                     "SECURE_HSTS_PRELOAD", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_PROXY_SSL_HEADER"]


def environment(**variables):
    """This process's environment without any setting of ours, plus `variables`;
    no .env file is read (ENV_FILE names none)."""
    names = {line.split("=", 1)[0].lstrip("# ") for line in open(settings.BASE_DIR / ".env.example")
             if "=" in line}
    env = {key: value for key, value in os.environ.items() if key not in names}
    # The suite's database (SQLite or the CI's PostgreSQL) stays, so does the interpreter's state.
    env.update(DJANGO_SETTINGS_MODULE="console.settings", ENV_FILE=os.devnull,
               DATABASE_URL=os.environ.get("DATABASE_URL", "sqlite:///:memory:"), **variables)
    return env


def manage(*args, **variables):
    return subprocess.run([sys.executable, "manage.py", *args], cwd=settings.BASE_DIR, env=environment(**variables),
                          capture_output=True, text=True, timeout=120)


def security_settings(**variables):
    code = f"from django.conf import settings; import json; print(json.dumps({{n: getattr(settings, n) for n in {SECURITY_SETTINGS!r}}}))"
    result = manage("shell", "--no-imports", "-c", code, **variables)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # a manage.py process of its own
def test_deploy_check_passes_without_a_warning_with_production_settings():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout, result.stdout + result.stderr


@pytest.mark.slow  # a manage.py process of its own
def test_deploy_check_names_what_plain_http_lacks():
    result = manage("check", "--deploy", "--fail-level", "WARNING", **{**PRODUCTION, "HTTPS_ONLY": "0"})

    assert result.returncode != 0
    for check in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check in result.stdout + result.stderr


@pytest.mark.slow  # a manage.py process of its own
def test_defaults_serve_plain_http_on_loopback():
    assert security_settings(SECRET_KEY="x" * 50) == {
        "SECURE_SSL_REDIRECT": False, "SECURE_HSTS_SECONDS": 0, "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SECURE_HSTS_PRELOAD": False, "SESSION_COOKIE_SECURE": False, "CSRF_COOKIE_SECURE": False,
        "SECURE_PROXY_SSL_HEADER": None}


@pytest.mark.slow  # a manage.py process of its own
def test_each_setting_overrides_https_only():
    values = security_settings(**{**PRODUCTION, "SECURE_HSTS_SECONDS": "300", "SECURE_HSTS_PRELOAD": "0"})

    assert values["SECURE_HSTS_SECONDS"] == 300 and values["SECURE_HSTS_PRELOAD"] is False
    assert values["SECURE_SSL_REDIRECT"] is True and values["SESSION_COOKIE_SECURE"] is True
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]


@pytest.fixture
def https_only(settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    return Client()


def test_https_only_redirects_plain_http_but_not_the_health_probe(db, https_only):
    response = https_only.get("/admin/login/")
    assert response.status_code == 301 and response["Location"] == "https://testserver/admin/login/"
    assert https_only.get("/health").status_code == 200


def test_https_behind_the_proxy_is_served_with_hsts(db, https_only):
    response = https_only.get("/admin/login/", HTTP_X_FORWARDED_PROTO="https")

    assert response.status_code == 200
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"


@pytest.mark.slow  # a manage.py process of its own
def test_the_render_cache_storage_is_named_by_the_environment():
    code = ("from speech_app.cache import cache_storage, render_cache; s = cache_storage(); "
            "print(type(s).__name__, s.base_url, render_cache().bounded)")
    result = manage("shell", "--no-imports", "-c", code, SPEECH_CACHE_STORAGE="django.core.files.storage.InMemoryStorage",
                    SPEECH_CACHE_STORAGE_OPTIONS='{"base_url": "/cache/"}', SECRET_KEY="x" * 50)
    assert result.returncode == 0, result.stderr
    # Not local files: the application does not bound it (the store's expiry does).
    assert result.stdout.strip().splitlines()[-1] == "InMemoryStorage /cache/ False"
