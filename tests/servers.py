"""Real server processes for the tests that need more than the test client: a migrated
SQLite project of its own in a temporary directory, served by gunicorn on loopback
(with the project's gunicorn.conf.py, as `make run` serves it)."""
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 60


class ServedProject:
    def __init__(self, tmp_path, **settings):
        self.tmp_path = tmp_path
        self.env = {**os.environ, "DJANGO_SETTINGS_MODULE": "console.settings", "DEBUG": "0",
                    "LOG_LEVEL": "WARNING", "SECRET_KEY": "test-only-secret-key-not-for-production",
                    "ALLOWED_HOSTS": "127.0.0.1", "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
                    "MEDIA_ROOT": str(tmp_path / "media"), "VAR_DIR": str(tmp_path / "var"),
                    "STATIC_ROOT": str(tmp_path / "static"), **settings}
        self.manage("migrate", "--noinput", "-v0")

    def manage(self, *args):
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 0, result.stderr + result.stdout
        return result.stdout

    def python(self, code):
        """Runs `code` with Django set up; returns the last line it printed."""
        return self.manage("shell", "-c", code).strip().splitlines()[-1]

    def serve(self, stack, name, workers=1):
        """Starts gunicorn (stopped when `stack` closes) and returns (base URL, log path)
        once it answers /health."""
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        log_path = self.tmp_path / f"{name}.log"
        log = stack.enter_context(open(log_path, "w"))
        server = subprocess.Popen([sys.executable, "-m", "gunicorn", "console.wsgi:application", "--workers",
                                   str(workers), "--bind", f"127.0.0.1:{port}"], cwd=ROOT, env=self.env,
                                  stdout=log, stderr=subprocess.STDOUT)
        stack.callback(_stop, server)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT
        while True:  # polls until the server answers (or fails)
            assert server.poll() is None, log_path.read_text()
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=10):
                    return base, log_path
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                assert time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.1)


def _stop(server):
    server.terminate()
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
