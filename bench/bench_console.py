"""The operators' console at size: the dashboard of a tenant with 100,000 calls and
10,000 leads, and the call list's transcript search over 100,000 calls (on
PostgreSQL, with the German full-text index; on SQLite for comparison). In process,
through Django's test client as a logged-in member (the whole admin page: scoping,
queries, template), after warm-up; p50/p95 of the rounds.

The baseline of the same run is Django's own admin page for one object (the
member's tenant), so the ratio says what the figures cost beyond any admin page.
Set BENCH_POSTGRES_URL (a PostgreSQL server whose user may create databases) for
the PostgreSQL rows; without it they are skipped and say so."""
import json
import os
import subprocess
import sys
import uuid
from contextlib import contextmanager

from bench.harness import ROOT, sized, temp_project

ROUNDS = 30

_SCRIPT = """
import json, random, statistics, time, datetime as dt
from django.db import connection, transaction
from django.db.models import F
from django.test import Client
from django.contrib.auth import get_user_model
from calls_app.models import Call, Carrier, TranscriptEntry, UsageCounter
from console.tenants.services import membership_add, tenant_create
from leads_app.models import Lead

random.seed(13)
tenant = tenant_create(slug="bench", name="Bench", minute_cap=100000)
carrier = Carrier.objects.create(id="benchcarrier", secret_nonce="n")
user = get_user_model().objects.create_user("member", "m@example.com", "pw", is_staff=True)
membership_add(tenant=tenant, user=user)
now = dt.datetime.now(dt.timezone.utc)
WORDS = "Guten Tag ich möchte gern wissen ob Sie morgen geöffnet haben und was die Reparatur kostet bitte rufen Sie zurück".split()
STATUSES = ["completed"] * 8 + ["no-answer", "busy", "failed"]
with transaction.atomic():
    for start in range(0, {calls}, 5000):
        batch = []
        for n in range(start, min(start + 5000, {calls})):
            at = now - dt.timedelta(minutes=7 * n % (60 * 24 * 90))
            batch.append(Call(tenant=tenant, carrier=carrier, direction=random.choice(["inbound", "outbound"]),
                              from_e164=f"+49301{{n:07d}}", to_e164="+493055501234", status=random.choice(STATUSES),
                              seconds=random.randint(0, 600), started_at=at, ended_at=at))
        Call.objects.bulk_create(batch)
    # Spread over 90 days like the start times (created_at is set on insert).
    Call.objects.filter(tenant=tenant).update(created_at=F("started_at"))
    ids = list(Call.objects.filter(tenant=tenant).values_list("id", flat=True))
    for start in range(0, len(ids), 5000):
        lines = []
        for n, call_id in enumerate(ids[start:start + 5000], start):
            words = random.sample(WORDS, 8) + (["Termin"] if n % 100 == 0 else [])
            lines.append(TranscriptEntry(call_id=call_id, role="user", text=" ".join(words), ts=now))
            lines.append(TranscriptEntry(call_id=call_id, role="assistant", text="Gerne, ich notiere das.", ts=now))
        TranscriptEntry.objects.bulk_create(lines)
    for start in range(0, {leads}, 5000):
        Lead.objects.bulk_create([Lead(tenant=tenant, kind="callback", phone=f"+49171{{n:07d}}",
                                       status=random.choice(["new", "contacted", "converted", "lost"]),
                                       preferred_at_resolved=now + dt.timedelta(hours=random.randint(-72, 72)))
                                  for n in range(start, min(start + 5000, {leads}))])
    UsageCounter.objects.create(tenant=tenant, period=now.strftime("%Y-%m"), minutes=4321, calls=999)
if connection.vendor == "postgresql":
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")

client = Client(HTTP_HOST="127.0.0.1")
client.force_login(user)

def timed(path, rounds={rounds}):
    for _ in range(3):
        assert client.get(path).status_code == 200
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        response = client.get(path)
        times.append(time.perf_counter() - started)
        assert response.status_code == 200
    times.sort()
    return {{"p50": statistics.median(times) * 1000, "p95": times[int(0.95 * len(times)) - 1] * 1000}}

found = client.get("/admin/calls_app/call/?q=Termin").content.decode().count("/change/")
print(json.dumps({{
    "vendor": connection.vendor,
    "dashboard": timed("/admin/"),
    "search": timed("/admin/calls_app/call/?q=Termin"),
    "number": timed("/admin/calls_app/call/?q=030%201000123"),
    "baseline": timed(f"/admin/tenants/tenant/{{tenant.pk}}/change/"),
    "found": found,
}}))
"""


@contextmanager
def postgres_database(url):
    """A fresh database on the server of `url`, dropped afterwards."""
    import psycopg

    name = f"bench_console_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _run(project, calls, leads):
    project.manage("collectstatic", "--noinput", "-v0")  # the admin's pages need the manifest
    # Not project.django(): filling 100,000 calls takes longer than its 300 s bound on a busy machine.
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c",
                             _SCRIPT.format(calls=calls, leads=leads, rounds=sized(ROUNDS))],
                            cwd=ROOT, env=project.env, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        raise RuntimeError(f"the console benchmark failed:\n{result.stderr}{result.stdout}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _rows(result, calls, leads):
    base = result["baseline"]["p95"]
    label = f"{result['vendor']}, {calls:,} calls, {leads:,} leads"
    return [
        {"page": f"dashboard ({label})", "p50 ms": f"{result['dashboard']['p50']:.0f}",
         "p95 ms": f"{result['dashboard']['p95']:.0f}", "p95 / baseline": f"{result['dashboard']['p95'] / base:.1f}"},
        {"page": f"call list, transcript search 'Termin' ({label})", "p50 ms": f"{result['search']['p50']:.0f}",
         "p95 ms": f"{result['search']['p95']:.0f}", "p95 / baseline": f"{result['search']['p95'] / base:.1f}"},
        {"page": f"call list, number search '030 1000123' ({label})", "p50 ms": f"{result['number']['p50']:.0f}",
         "p95 ms": f"{result['number']['p95']:.0f}", "p95 / baseline": f"{result['number']['p95'] / base:.1f}"},
        {"page": f"baseline: the tenant's admin change page ({result['vendor']})",
         "p50 ms": f"{result['baseline']['p50']:.0f}", "p95 ms": f"{base:.0f}", "p95 / baseline": "1.0"},
    ]


def dashboard_and_search(load):
    """Console: dashboard and call search at size, whole admin pages in process (ms)."""
    calls, leads, rows = sized(100_000, 1_000), sized(10_000, 100), []
    with temp_project() as project:
        rows += _rows(_run(project, calls, leads), calls, leads)
    postgres = os.environ.get("BENCH_POSTGRES_URL")
    if not postgres:
        rows.append({"page": "PostgreSQL: skipped (set BENCH_POSTGRES_URL)", "p50 ms": "", "p95 ms": "",
                     "p95 / baseline": ""})
        return rows
    with postgres_database(postgres) as url, temp_project() as project:
        project.env["DATABASE_URL"] = url
        project.manage("migrate", "--noinput", "-v0")
        rows += _rows(_run(project, calls, leads), calls, leads)
    return rows
