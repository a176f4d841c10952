"""Campaigns: importing 50,000 contacts from an Excel-style CSV, and the scheduler's
cost per tick with 50,000 pending contacts, in process, on SQLite and PostgreSQL."""
import json
import os

from bench.bench_speed import postgres
from bench.harness import sized, smoke, temp_project

CONTACTS = 50_000
_TIMINGS = """
import csv, io, json, statistics, time
from datetime import datetime, timedelta, UTC
from campaigns_app import services
from campaigns_app.contact_rows import from_csv
from campaigns_app.models import CampaignAttempt
from campaigns_app.scheduler import campaigns_tick
from console.csv_import import csv_table
from console.numbers.services import number_create
from console.tenants.services import tenant_create

tenant = tenant_create(slug="bench", name="Bench", minute_cap=10**6, max_call_minutes=2)
tenant.campaign_concurrency_limit = 5
tenant.save()
number_create(tenant=tenant, e164="+493055501234")
buffer = io.StringIO()
writer = csv.writer(buffer, delimiter=";")
writer.writerow(["Telefon", "Name", "Vorname", "consentSource", "consentAt", "consentText"])
for i in range({count}):
    writer.writerow([f"0176 {{10000000 + i}}", f"Müller {{i}}", "Jürgen", "Webformular", "01.10.2026 10:00",
                     "Ja, rufen Sie mich zu Angeboten an."])
data = buffer.getvalue().encode("cp1252")
now = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)  # a Tuesday, 10:00 in Berlin
campaign = services.campaign_create(tenant=tenant, name="Bench", purpose="marketing", concurrency=5)

started = time.perf_counter()
header, lines, encoding, separator = csv_table(data, max_rows=100000)
rows, errors = from_csv(header, lines, time_zone=tenant.time_zone, now=now)
parsed = time.perf_counter() - started
report = services.contacts_add(campaign=campaign, rows=rows, errors=errors, now=now)
imported = time.perf_counter() - started
assert report["added"] == {count}, report

services.campaign_transition(campaign=campaign, change="start", now=now)
first = time.perf_counter(); campaigns_tick(now=now); claim_tick = time.perf_counter() - first
assert CampaignAttempt.objects.count() == 5
steady = []
for minute in range(1, 41):
    tick_started = time.perf_counter()
    campaigns_tick(now=now + timedelta(seconds=minute))
    steady.append(time.perf_counter() - tick_started)
closed = []
for hour in range(1, 21):
    tick_started = time.perf_counter()
    campaigns_tick(now=now + timedelta(hours=11, minutes=hour))  # 21:00 on: the window is shut
    closed.append(time.perf_counter() - tick_started)
print(json.dumps({{"bytes": len(data), "parsed": parsed, "imported": imported, "claim": claim_tick,
                  "steady": statistics.median(steady), "steady_max": max(steady),
                  "closed": statistics.median(closed)}}))
"""


def _measure(database_url, contacts):
    with temp_project(database_url=database_url) as project:
        out = project.django(_TIMINGS.format(count=contacts))
        return json.loads(out.strip().splitlines()[-1])


def import_and_tick(load):
    """Campaigns: import of 50,000 contacts (target ≤ 30 s) and scheduler cost per tick with 50,000 pending (≤ 50 ms)."""
    contacts = sized(CONTACTS, 50)
    by_database = {"SQLite": _measure(None, contacts)}
    if not os.environ.get("BENCH_SKIP_POSTGRES") and not smoke():  # as in bench_speed.tenant_bound
        with postgres() as url:
            by_database["PostgreSQL"] = _measure(url, contacts) if url else None
    rows = []
    for name, t in by_database.items():
        if t is None:
            rows.append({"database": name, "step": "(PostgreSQL could not be started)", "time": "—"})
            continue
        rows += [
            {"database": name, "step": f"CSV of {contacts:,} rows ({t['bytes'] / 1e6:.1f} MB, cp1252, ';') read "
                                       f"and checked", "time": f"{t['parsed']:.2f} s"},
            {"database": name, "step": "… and stored: the whole import (target ≤ 30 s)",
             "time": f"{t['imported']:.2f} s"},
            {"database": name, "step": "tick that claims and dials 5 attempts (sim carrier)",
             "time": f"{t['claim'] * 1000:.1f} ms"},
            {"database": name, "step": f"tick with {contacts - 5:,} pending, 5 in flight (median of 40; target ≤ "
                                       f"50 ms)", "time": f"{t['steady'] * 1000:.1f} ms (max {t['steady_max'] * 1000:.1f})"},
            {"database": name, "step": "tick outside the window (median of 20)", "time": f"{t['closed'] * 1000:.1f} ms"},
        ]
    return rows
