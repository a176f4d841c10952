"""The project served by real gunicorn processes on loopback, for tests that need
several processes (rate limits shared across workers, workers killed mid-burst).

The processes use a scratch database of their own, of the vendor the test run uses:
an SQLite file in the test's directory, or a fresh PostgreSQL database on the server
that DATABASE_URL names (dropped afterwards). Every wait is bounded."""
import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

from tests.ports import worker_ports

PROJECT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 60
# Our loopback ports (other tests and servers of this machine keep off them), this
# xdist worker's share of them.
PORTS = worker_ports(range(8500, 8600))


def free_port():
    for port in PORTS:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as probe:  # all taken: any free port
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)


def request(method, url, body=None, headers=None, timeout=30):
    """One HTTP request; an Answer, or None when the connection broke (a killed worker)."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return Answer(response.status, dict(response.headers), response.read())
    except urllib.error.HTTPError as error:
        return Answer(error.code, dict(error.headers), error.read())
    except (urllib.error.URLError, http.client.HTTPException, OSError):
        # Refused, reset, timed out, or an answer cut off (IncompleteRead): no answer.
        return None


class LiveService:
    def __init__(self, tmp_path):
        self.tmp = Path(tmp_path)
        self.database_url, self._drop = _scratch_database(self.tmp)
        self.env = {
            **os.environ,
            "ENV_FILE": str(self.tmp / "no.env"),
            "DATABASE_URL": self.database_url,
            "SECRET_KEY": "live-service-test-secret-" + uuid.uuid4().hex,
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "MEDIA_ROOT": str(self.tmp / "media"),
            "STATIC_ROOT": str(self.tmp / "static"),
            "VAR_DIR": str(self.tmp / "var"),
            "CACHE_URL": "locmemcache://",
            # With REDIS_URL the servers share Redis: one prefix for this service's servers
            # (their rate-limit windows are one), none shared with another service's, which
            # may run at the same moment on the other test worker.
            "CACHE_KEY_PREFIX": "live-" + uuid.uuid4().hex[:12],
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        self.servers = []

    def manage(self, *args, timeout=300):
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=PROJECT, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)}: {done.stdout[-800:]} {done.stderr[-1500:]}")
        return done.stdout

    def migrate(self):
        self.manage("migrate", "--noinput", "-v0")

    def start(self, *, workers=1):
        """A gunicorn master with `workers` sync workers; returns its base URL."""
        port = free_port()
        log = open(self.tmp / f"gunicorn-{port}.log", "w")
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "console.wsgi", "--bind", f"127.0.0.1:{port}",
             "--workers", str(workers), "--timeout", "30", "--graceful-timeout", "5"],
            cwd=PROJECT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.servers.append(process)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {(self.tmp / f'gunicorn-{port}.log').read_text()[-1500:]}")
            answer = request("GET", base + "/health", timeout=5)
            if answer is not None and answer.status == 200:
                return base, process
            time.sleep(0.2)
        raise RuntimeError(f"gunicorn did not answer within {START_TIMEOUT} s")

    @staticmethod
    def workers_of(master):
        """The worker pids of a gunicorn master (its child processes)."""
        children = Path(f"/proc/{master.pid}/task/{master.pid}/children")
        return [int(pid) for pid in children.read_text().split()] if children.exists() else []

    @staticmethod
    def busy_workers(master, base):
        """The workers that hold an accepted connection of `base` right now (mid-request):
        their open sockets matched against the established TCP connections whose local
        port is the server's (Linux /proc)."""
        port = int(base.rsplit(":", 1)[1])
        established = set()
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                established.add(fields[9])
        busy = []
        for pid in LiveService.workers_of(master):
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
                if any(link.startswith("socket:[") and link[8:-1] in established for link in links):
                    busy.append(pid)
        return busy

    def stop(self):
        for process in self.servers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.servers:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)
        self.servers = []
        self._drop()


def _scratch_database(tmp):
    """(DATABASE_URL of a fresh empty database, a function that drops it)."""
    if settings.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{tmp / 'live.sqlite3'}", lambda: None
    import psycopg

    server = urlsplit(os.environ["DATABASE_URL"])
    name = f"stimmwerk_live_{uuid.uuid4().hex[:12]}"

    def admin(sql):
        with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as connection:
            connection.execute(sql)

    admin(f'CREATE DATABASE "{name}"')
    return urlunsplit(server._replace(path=f"/{name}")), lambda: admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
