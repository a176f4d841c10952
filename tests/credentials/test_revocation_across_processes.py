"""A revoked API key stops working on every server process within the stated bound
(API_KEY_CACHE_SECONDS, console/credentials/verified.py): two gunicorn processes share
one SQLite database, both have verified the key, a third process revokes it.

Writes are refused at once. Reads are refused once the bound has passed since the
revocation committed; the test waits for exactly that moment (the wait is what is
tested, not a synchronisation), so a slow machine only makes the check later, never
flaky."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
SERVER_START_TIMEOUT = 60


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call(url, key, method="GET", body=None):
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {key}", "X-Tenant": "acme",
                                              "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.fixture
def project(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "console.settings", "DEBUG": "0", "LOG_LEVEL": "WARNING",
           "SECRET_KEY": "test-only-secret-key-not-for-production", "ALLOWED_HOSTS": "127.0.0.1",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "MEDIA_ROOT": str(tmp_path / "media"),
           "VAR_DIR": str(tmp_path / "var"), "STATIC_ROOT": str(tmp_path / "static"),
           "API_KEY_CACHE_SECONDS": str(settings.API_KEY_CACHE_SECONDS)}  # the default bound, as deployed

    def manage(*args):
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 0, result.stderr + result.stdout
        return result.stdout

    manage("migrate", "--noinput", "-v0")
    key = manage("shell", "-c", "from console.credentials.services import api_key_create\n"
                                "from console.tenants.services import tenant_create\n"
                                "print(api_key_create(tenant=tenant_create(slug='acme', name='Acme'))[1])\n")
    return env, manage, key.strip().splitlines()[-1]


def serve(stack, env, log_path):
    port = free_port()
    log = stack.enter_context(open(log_path, "w"))
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "console.wsgi:application", "--workers", "1",
                               "--bind", f"127.0.0.1:{port}"], cwd=ROOT, env=env, stdout=log,
                              stderr=subprocess.STDOUT)
    stack.callback(stop, server)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while True:  # polls until the server answers (or fails)
        assert server.poll() is None, log_path.read_text()
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=10):
                return base
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.1)


def stop(server):
    server.terminate()
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def test_a_revoked_key_is_refused_by_every_process_within_the_bound(project, tmp_path):
    env, manage, key = project
    bound = settings.API_KEY_CACHE_SECONDS
    assert 0 < bound <= 5, "the stated bound is a few seconds"
    with ExitStack() as stack:
        servers = [serve(stack, env, tmp_path / f"server{n}.log") for n in (1, 2)]
        for base in servers:  # each process verifies the key and keeps it
            assert [call(f"{base}/v2/usage", key) for _ in range(2)] == [200, 200]

        manage("shell", "-c", "from console.credentials.models import ApiKey\n"
                              "from console.credentials.services import api_key_revoke\n"
                              "for api_key in ApiKey.objects.all():\n"
                              "    api_key_revoke(api_key=api_key)\n")
        revoked_by = time.monotonic()  # the revoking process has committed and exited

        for base in servers:
            assert call(f"{base}/v2/audio/settings", key, "PATCH", {"recordingEnabled": True}) == 401
        time.sleep(max(0.0, revoked_by + bound - time.monotonic()))
        assert [call(f"{base}/v2/usage", key) for base in servers] == [401, 401]
