"""Shared helpers of the benchmarks: a throwaway project with its own SQLite
database, gunicorn on a free loopback port, wrk as the load generator (a separate
process), and the table printer. Load is bounded and goes to 127.0.0.1 only.

Environment knobs:
  BENCH_DURATION     seconds per measurement (default 8)
  BENCH_THREADS      wrk threads (default 2)
  BENCH_CONNECTIONS  wrk connections (default 16)
  BENCH_WARMUP       seconds of unmeasured load per URL before the first round (default 2)
  BENCH_ROUNDS       measurements per URL, interleaved; the table shows medians (default 3)
  BENCH_SMOKE=1      (`bench/run.py --smoke`) every benchmark at its smallest: one round,
                     one turn, a second of load, small data. Its figures mean nothing; it
                     proves each benchmark still runs (tests/bench/test_smoke.py).
"""
import atexit
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results"
HOST = "127.0.0.1"
BENCH_SETTINGS = "bench.settings"
BENCH_SECRET_KEY = "bench-only-secret-key-not-for-production"


def configure_django() -> None:
    """Django set up in this process, for the product code some benchmarks run here
    (synthesis, encoding, decoding read settings): the benchmarks' settings with a
    bench-only key. Each project's processes get an environment of their own (Project)."""
    import django

    os.environ["DJANGO_SETTINGS_MODULE"] = BENCH_SETTINGS
    os.environ.setdefault("SECRET_KEY", BENCH_SECRET_KEY)
    django.setup()


# --- Load parameters -----------------------------------------------------------------

def smoke() -> bool:
    """Whether this is a smoke run (BENCH_SMOKE=1): each benchmark once, at its smallest."""
    return os.environ.get("BENCH_SMOKE") == "1"


def sized(full: int, small: int = 1) -> int:
    """`full` (turns, rounds, rows of data) in a measurement, `small` in a smoke run."""
    return small if smoke() else full


@dataclass(frozen=True)
class Load:
    threads: int
    connections: int
    duration: int  # seconds
    warmup: int  # seconds
    rounds: int

    @classmethod
    def from_env(cls):
        def seconds(name, default):
            # "8" and "8s" both mean eight seconds.
            return int(os.environ.get(name, default).rstrip("s"))

        if smoke():
            return cls(threads=1, connections=2, duration=1, warmup=0, rounds=1)
        return cls(
            threads=int(os.environ.get("BENCH_THREADS", "2")),
            connections=int(os.environ.get("BENCH_CONNECTIONS", "16")),
            duration=seconds("BENCH_DURATION", "8"),
            warmup=seconds("BENCH_WARMUP", "2"),
            rounds=int(os.environ.get("BENCH_ROUNDS", "3")),
        )


# --- A throwaway project: database, media and var directories --------------------------

class Project:
    """The environment of one benchmark: every path lives in a temporary directory."""

    def __init__(self, tmp, settings=BENCH_SETTINGS, database_url=None):
        self.tmp = tmp
        for name in ("media", "var", "static"):
            (tmp / name).mkdir()
        # Explicit values win over a developer's .env (settings read it without overwrite).
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": settings,
            "DATABASE_URL": database_url or f"sqlite:///{tmp / 'db.sqlite3'}",
            "SECRET_KEY": BENCH_SECRET_KEY,
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "MEDIA_ROOT": str(tmp / "media"),
            "VAR_DIR": str(tmp / "var"),
            # Empty but existing, so whitenoise does not warn about a missing directory.
            "STATIC_ROOT": str(tmp / "static"),
            "LOG_LEVEL": "WARNING",
        }

    def manage(self, *args):
        """Runs `manage.py *args` in this environment; returns its stdout."""
        result = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env,
            capture_output=True, text=True, timeout=300,
        )
        if result.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stderr}{result.stdout}")
        return result.stdout

    def django(self, code):
        """Runs Python code with Django set up (`manage.py shell -c`); returns its stdout."""
        return self.manage("shell", "-c", code)


_migrated: dict[str, Path] = {}  # settings module → an empty migrated SQLite database of this run


def _migrated_sqlite(settings: str) -> Path:
    """An empty SQLite database migrated once per run (migrating takes seconds; each
    benchmark's project starts from a copy)."""
    if settings not in _migrated:
        folder = Path(tempfile.mkdtemp(prefix="stimmwerk-bench-migrated-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        (folder / "template").mkdir()
        Project(folder / "template", settings).manage("migrate", "--noinput", "-v0")
        _migrated[settings] = folder / "template" / "db.sqlite3"
    return _migrated[settings]


@contextmanager
def temp_project(settings=BENCH_SETTINGS, database_url=None):
    """A migrated, empty project (SQLite unless `database_url` names an empty database);
    everything is deleted on exit."""
    with tempfile.TemporaryDirectory(prefix="stimmwerk-bench-") as tmp:
        project = Project(Path(tmp), settings, database_url)
        if database_url is None:
            shutil.copyfile(_migrated_sqlite(settings), project.tmp / "db.sqlite3")
        else:
            project.manage("migrate", "--noinput", "-v0")
        yield project


def create_tenant_with_key(project, slug):
    """A tenant and an API key for it; returns the raw key."""
    project.manage("create_tenant", slug, "--name", f"Bench {slug}")
    return project.manage("create_api_key", slug).strip().splitlines()[-1]


# --- The server --------------------------------------------------------------------------

def free_port():
    # The port is released before gunicorn binds it; the race is harmless on a bench host.
    # BENCH_PORTS ("18100-18199") keeps the servers to a range on a host shared with others.
    first, _, last = os.environ.get("BENCH_PORTS", "0-0").partition("-")
    for port in range(int(first), int(last or first) + 1):
        with socket.socket() as sock:
            try:
                sock.bind((HOST, port))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise RuntimeError(f"no free port in BENCH_PORTS={os.environ['BENCH_PORTS']}")


@contextmanager
def gunicorn(project, workers=2, startup_timeout=120):
    """Serves console.wsgi with gunicorn on loopback; yields the base URL. The start-up
    bound is generous: on a machine busy with other work (the smoke test beside the
    suite) two servers' workers took longer than 30 s to answer /health."""
    port = free_port()
    log_path = project.tmp / "gunicorn.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "console.wsgi:application",
             "--bind", f"{HOST}:{port}", "--workers", str(workers)],
            cwd=ROOT, env=project.env, stdout=log, stderr=subprocess.STDOUT,
        )
    base_url = f"http://{HOST}:{port}"
    try:
        wait_until_up(f"{base_url}/health", server, log_path, startup_timeout)
        yield base_url
    finally:
        stop(server)


def wait_until_up(url, server, log_path, timeout):
    """Polls `url` until it answers 200; fails early if the server exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {server.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.1)
    stop(server)
    raise RuntimeError(f"{url} did not answer within {timeout}s:\n{log_path.read_text()[-3000:]}")


def stop(server):
    """SIGTERM lets gunicorn stop its workers; SIGKILL only if it hangs."""
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def get_json(url, headers=None):
    """One request that must answer 200 with JSON, so that wrk never measures errors."""
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


# --- The load generator ----------------------------------------------------------------------

@dataclass(frozen=True)
class WrkResult:
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    requests: int
    socket_errors: int


_MS_PER_UNIT = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}


def parse_wrk(output):
    """Requests/sec and the 50th and 99th latency percentiles of `wrk --latency` output."""
    def search(pattern):
        match = re.search(pattern, output, re.MULTILINE)
        if match is None:
            raise ValueError(f"unexpected wrk output (no match for {pattern!r}):\n{output}")
        return match

    def percentile(p):
        value, unit = search(rf"^\s*{p}%\s+([\d.]+)(us|ms|s|m|h)\s*$").groups()
        return float(value) * _MS_PER_UNIT[unit]

    non_2xx = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", output)
    if non_2xx:
        # Error responses are cheap; counting them as throughput would flatter the figures.
        raise RuntimeError(f"{non_2xx.group(1)} error responses under load:\n{output}")
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    return WrkResult(
        requests_per_second=float(search(r"^Requests/sec:\s+([\d.]+)").group(1)),
        p50_ms=percentile(50),
        p99_ms=percentile(99),
        requests=int(search(r"^\s*(\d+) requests in").group(1)),
        socket_errors=sum(map(int, errors.groups())) if errors else 0,
    )


def wrk(url, load, headers=None, duration=None, script=None):
    """Runs wrk (a separate process) against `url`; returns the parsed result.
    `script` is a wrk Lua file (e.g. one that makes the requests POSTs with a body)."""
    duration = duration or load.duration
    command = ["wrk", f"-t{load.threads}", f"-c{load.connections}", f"-d{duration}s", "--latency"]
    for name, value in (headers or {}).items():
        command += ["-H", f"{name}: {value}"]
    if script:
        command += ["-s", str(script)]
    # The margin covers wrk's start and its wait for requests still in flight.
    result = subprocess.run(command + [url], capture_output=True, text=True, timeout=duration + 60)
    if result.returncode != 0:
        raise RuntimeError(f"wrk failed on {url}:\n{result.stderr}{result.stdout}")
    parsed = parse_wrk(result.stdout)
    if parsed.socket_errors:
        print(f"warning: {parsed.socket_errors} socket errors on {url}", file=sys.stderr)
    return parsed


def json_request_script(project, name, method, body):
    """A wrk Lua script (in the project's directory) whose requests are `method` with
    the JSON `body`; pass it to `wrk`/`compare`. Returns its path."""
    path = project.tmp / f"{name}.lua"
    # A JSON string literal of ASCII JSON is a valid Lua string literal too.
    literal = json.dumps(json.dumps(body, ensure_ascii=True))
    path.write_text(f'wrk.method = "{method}"\nwrk.body = {literal}\n'
                    'wrk.headers["Content-Type"] = "application/json"\n')
    return path


def compare(base_url, endpoints, load, *, bracketed=False):
    """Measures `endpoints` [(label, path, headers[, wrk Lua script])], the first being the ceiling.
    A path may be a whole URL (another server, e.g. a bare Django project as the ceiling).

    The shared machine is noisy, so the URLs are measured in interleaved rounds and
    each figure is the median over the rounds; the share of the ceiling is the median
    of the per-round ratios, each taken against the ceiling of the same round.

    `bracketed`: the ceiling is measured again right before every other URL and once
    more at the end, and each share is taken against the mean of the two ceilings
    measured just before and just after it. A round of many URLs lasts minutes, in
    which a shared machine's speed drifts; the URL and its two ceilings, seconds
    apart, drift alike. The ceiling's own figures are then the medians of all its runs.
    """
    endpoints = [(label, path if path.startswith("http") else base_url + path, *rest, None)[:4]
                 for label, path, *rest in endpoints]  # the script is optional
    for _label, url, headers, script in endpoints:
        if script is None:  # a script's requests (e.g. POSTs) are checked by their benchmark
            get_json(url, headers)
        if load.warmup:  # Both workers loaded, connections and caches warm.
            wrk(url, load, headers, duration=load.warmup, script=script)
    others = range(1, len(endpoints))
    # Which endpoint is measured when: (index, round); the ceiling is index 0.
    if bracketed:
        schedule = [(index, round_) for round_ in range(load.rounds) for other in others for index in (0, other)]
        schedule.append((0, load.rounds - 1))
    else:
        schedule = [(index, round_) for round_ in range(load.rounds) for index in (0, *others)]
    measured = [wrk(endpoints[index][1], load, endpoints[index][2], script=endpoints[index][3])
                for index, _round in schedule]
    results = {index: [] for index in range(len(endpoints))}
    shares = {index: [] for index in range(len(endpoints))}
    for position, ((index, round_), result) in enumerate(zip(schedule, measured, strict=True)):
        results[index].append(result)
        if index == 0:
            shares[0].append(1.0)
            continue
        if bracketed:
            ceiling = (measured[position - 1].requests_per_second + measured[position + 1].requests_per_second) / 2
        else:
            ceiling = measured[schedule.index((0, round_))].requests_per_second
        shares[index].append(result.requests_per_second / ceiling)
    rows = []
    for index, (label, *_request) in enumerate(endpoints):
        rows.append({
            "endpoint": label,
            "req/s": f"{median(r.requests_per_second for r in results[index]):.0f}",
            "p50 ms": f"{median(r.p50_ms for r in results[index]):.2f}",
            "p99 ms": f"{median(r.p99_ms for r in results[index]):.2f}",
            "share of ceiling": f"{median(shares[index]):.1%}",
            "_rounds": [asdict(r) for r in results[index]],
        })
    return rows


# --- Report ------------------------------------------------------------------------------------

def machine_info():
    cpu_model = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        match = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.MULTILINE)
        cpu_model = match.group(1).strip() if match else cpu_model
    wrk_version = subprocess.run(["wrk", "--version"], capture_output=True, text=True).stdout.split("[")[0]
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        # nproc counts the CPUs this process may use, which is what the server gets.
        "nproc": len(os.sched_getaffinity(0)),
        "cpu": cpu_model,
        "python": platform.python_version(),
        "wrk": wrk_version.strip(),
    }


def print_table(title, rows):
    columns = [c for c in rows[0] if not c.startswith("_")]
    widths = {c: max(len(c), *(len(str(row[c])) for row in rows)) for c in columns}
    print(f"\n{title}")
    print(" | ".join(c.ljust(widths[c]) for c in columns))
    print("-+-".join("-" * widths[c] for c in columns))
    for row in rows:
        # The first column is text; the figures are right-aligned.
        cells = [str(row[c]).ljust(widths[c]) if i == 0 else str(row[c]).rjust(widths[c])
                 for i, c in enumerate(columns)]
        print(" | ".join(cells))


def dead_air(arrivals, bytes_per_second):
    """The longest silence a caller hears within the agent's speech, from `arrivals`
    [(monotonic time, bytes)] of its audio in order: each piece plays from its arrival or
    when the one before ends, whichever is later; a piece that arrives after the audio
    before it ran out leaves that gap."""
    longest, playing_until = 0.0, None
    for at, size in arrivals:
        if playing_until is not None and at > playing_until:
            longest = max(longest, at - playing_until)
        playing_until = max(at, playing_until or at) + size / bytes_per_second
    return longest
