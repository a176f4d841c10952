"""Tenant-bound requests against the framework's own ceiling (issue 14).

The ceiling is a bare Django view returning `{}` in a project of its own without
middleware or database (bench/bare.py), under the same gunicorn (2 sync workers,
loopback). Every row of the issue's table is measured beside it in interleaved rounds
of the same run, and each share is taken against the ceiling of its round: first with
SQLite, then with a throwaway PostgreSQL server (.ci/postgres; persistent connections,
CONN_MAX_AGE as configured). The load is the issue's, `wrk -t1 -c8` (BENCH_THREADS and
BENCH_CONNECTIONS override it), 5 seconds per run (BENCH_DURATION overrides it). The
ceiling is measured right before every URL and once more at the end; each share is
against the mean of the ceilings just before and just after it (harness.compare).

Data: the demo tenant of `seed_demo` (2 assistants, 4 calls, 4 leads, an API key) and
a tenant `bulk` with 50 assistants, 50 leads and 200 calls of 6 transcript lines each.
"""
import contextlib
import dataclasses
import os
import re
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from bench.harness import ROOT, compare, free_port, get_json, gunicorn, smoke, stop, temp_project, wait_until_up

# label, path, tenant (None: no credentials), target share of the ceiling, target p99 in ms
ROWS = [
    ("GET /health", "/health", None, 0.70, None),
    ("GET /v2/usage", "/v2/usage", "demo", 0.45, None),
    ("GET /v2/assistants (2)", "/v2/assistants", "demo", 0.40, None),
    ("GET /v2/assistants (50)", "/v2/assistants", "bulk", 0.30, None),
    ("GET /v2/leads (50)", "/v2/leads", "bulk", 0.30, None),
    ("GET /v2/calls?limit=200 (demo: 4 calls)", "/v2/calls?limit=200", "demo", 0.25, None),
    ("GET /v2/calls?limit=200 (200 calls, 6 lines each)", "/v2/calls?limit=200", "bulk", 0.10, None),
    ("GET /v2/audio/scripts?analyze=1", "/v2/audio/scripts?analyze=1", "demo", 0.30, 25.0),
]
CEILING = "bare Django view (ceiling)"

_BULK = """
import datetime as dt
from calls_app.models import Call, TranscriptEntry
from calls_app.services import carrier_create
from console.assistants.models import Assistant
from console.credentials.services import api_key_create
from console.tenants.services import tenant_create
from leads_app.models import Lead
tenant = tenant_create(slug="bulk", name="Bulk GmbH")
carrier_create(carrier_id="bulk")
now = dt.datetime.now(dt.timezone.utc).replace(microsecond=123456)
calls = Call.objects.bulk_create(
    Call(tenant=tenant, carrier_id="bulk", carrier_call_id=f"B{n}", direction="inbound", from_e164="+491711234567",
         to_e164="+493055501234", status="completed", seconds=61, disclosed=True, started_at=now, ended_at=now)
    for n in range(200))
TranscriptEntry.objects.bulk_create(
    TranscriptEntry(call=call, role=("assistant", "user")[k % 2], text=f"Zeile {k} des Gesprächs {n}.",
                    ts=now + dt.timedelta(seconds=k))
    for n, call in enumerate(calls) for k in range(6))
Assistant.objects.bulk_create(
    Assistant(tenant=tenant, name=f"Assistent {n:02d}", description="Nimmt Anrufe an und bietet einen Rückruf an.")
    for n in range(50))
Lead.objects.bulk_create(
    Lead(tenant=tenant, kind="callback", phone="+491712345678", preferred_at="tomorrow-am", preferred_at_resolved=now,
         page_url="https://bulk.example/kontakt")
    for n in range(50))
print(api_key_create(tenant=tenant)[1])
"""


def tenant_bound(load):
    """Tenant-bound endpoints as shares of a bare Django view, SQLite and PostgreSQL (issue 14)."""
    # A smoke run keeps its own load (one second, one round).
    if not smoke() and "BENCH_THREADS" not in os.environ and "BENCH_CONNECTIONS" not in os.environ:
        load = dataclasses.replace(load, threads=1, connections=8)
    if not smoke() and "BENCH_DURATION" not in os.environ:
        # The ceiling runs before every URL (bracketed): shorter runs keep the whole
        # table at about ten minutes.
        load = dataclasses.replace(load, duration=5)
    print(f"tenant_bound: wrk -t{load.threads} -c{load.connections} -d{load.duration}s, load average "
          f"{os.getloadavg()[0]:.1f} at the start", file=sys.stderr)
    # PostgreSQL starts first: after thousands of wrk connections its port could be one
    # that a closed connection still holds (TIME_WAIT).
    # A smoke run measures SQLite only: PostgreSQL's path is the same code, and starting
    # a server costs the smoke test more than the rest of this benchmark.
    with postgres() if not smoke() else contextlib.nullcontext() as database_url:
        by_database = {"SQLite": _measure(None, load)}
        by_database["PostgreSQL"] = _measure(database_url, load) if database_url else None
    print(f"tenant_bound: load average {os.getloadavg()[0]:.1f} at the end", file=sys.stderr)
    return _table(by_database)


def _measure(database_url, load):
    with temp_project(database_url=database_url) as project:
        project.manage("seed_demo")
        keys = {"demo": project.manage("create_api_key", "demo").strip().splitlines()[-1],
                "bulk": project.django(_BULK).strip().splitlines()[-1]}
        headers = {slug: {"Authorization": f"Bearer {key}", "X-Tenant": slug} for slug, key in keys.items()}
        with gunicorn(project, workers=2) as base_url, bare_gunicorn() as bare_url:
            # The assistants list is not paged (it takes no query parameters).
            counts = {name: len(get_json(f"{base_url}/v2/{name}{query}", headers["bulk"])[name])
                      for name, query in (("assistants", ""), ("leads", "?limit=200"), ("calls", "?limit=200"))}
            assert counts == {"assistants": 50, "leads": 50, "calls": 200}, counts
            endpoints = [(CEILING, f"{bare_url}/bare", None)]
            endpoints += [(label, path, headers.get(tenant)) for label, path, tenant, *_targets in ROWS]
            return compare(base_url, endpoints, load, bracketed=True)


@contextmanager
def bare_gunicorn():
    """Serves bench/bare.py with 2 sync workers; from a directory of its own, so that
    not even the project's gunicorn.conf.py applies."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="stimmwerk-bench-bare-") as tmp:
        with open(f"{tmp}/gunicorn.log", "w") as log:
            server = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "bench.bare:application", "--pythonpath", str(ROOT),
                 "--bind", f"127.0.0.1:{port}", "--workers", "2"],
                cwd=tmp, stdout=log, stderr=subprocess.STDOUT,
            )
        base_url = f"http://127.0.0.1:{port}"
        try:
            wait_until_up(f"{base_url}/bare", server, Path(tmp) / "gunicorn.log", timeout=30)
            yield base_url
        finally:
            stop(server)


@contextmanager
def postgres():
    """A throwaway PostgreSQL server on loopback (.ci/postgres; PGPORT_CI chooses the
    port, else a free one); yields its DATABASE_URL, or None if it cannot be started
    (then the table says so and the SQLite figures still count)."""
    data_dir = tempfile.mkdtemp(prefix="stimmwerk-bench-pg-")
    env = {**os.environ, "PGPORT_CI": os.environ.get("PGPORT_CI") or str(free_port())}
    started = subprocess.run(["bash", ".ci/postgres", "start", data_dir], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=600)
    url = re.search(r"DATABASE_URL=(\S+)", started.stdout)
    try:
        if started.returncode != 0 or url is None:
            print(f"PostgreSQL could not be started, its column stays empty:\n{started.stderr[-1500:]}",
                  file=sys.stderr)
            yield None
        else:
            yield url.group(1)
    finally:
        subprocess.run(["bash", ".ci/postgres", "stop", data_dir], cwd=ROOT, env=env, capture_output=True,
                       timeout=120)


def _table(by_database):
    rows = []
    labels = [CEILING] + [label for label, *_rest in ROWS]
    targets = {label: (share, p99) for label, _path, _tenant, share, p99 in ROWS}
    for label in labels:
        share_target, p99_target = targets.get(label, (None, None))
        target = "" if share_target is None else f">= {share_target:.2f}" + (
            f", p99 <= {p99_target:.0f} ms" if p99_target else "")
        row = {"endpoint": label, "target": target}
        met = []
        for database, measured in by_database.items():
            result = next((r for r in measured or () if r["endpoint"] == label), None)
            if result is None:
                row.update({f"{database} req/s": "-", f"{database} p50/p99 ms": "-", f"{database} share": "-"})
                continue
            share = float(result["share of ceiling"].rstrip("%")) / 100  # to 0.1 %, as printed
            row.update({
                f"{database} req/s": result["req/s"],
                f"{database} p50/p99 ms": f"{float(result['p50 ms']):.1f} / {float(result['p99 ms']):.1f}",
                f"{database} share": f"{share:.3f}",
            })
            row[f"_{database} rounds"] = result["_rounds"]
            if share_target is not None:
                met.append("yes" if share >= share_target and (
                    p99_target is None or float(result["p99 ms"]) <= p99_target) else "NO")
        row["met"] = "/".join(met)
        rows.append(row)
    return rows
