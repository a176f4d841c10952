"""Faults under load, through real gunicorn processes on loopback: a worker killed with
SIGKILL in the middle of a burst of 500 lead posts and 500 carrier events, and the
database locked for a while (on PostgreSQL also every connection dropped).

Clients behave as the contract asks: a broken connection or a 5xx is retried with
the same Idempotency-Key (leads) or the same event (carriers). Afterwards the rows
match exactly the requests that got a 2xx, usage matches the calls
(`recompute_usage --dry-run` exits 0), and the same server answers again without a
restart. Figures of a run are in docs/performance-history.md ("Faults")."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from calls_app.signing import signature_header
from tests.live_service import PROJECT, LiveService, request

pytestmark = pytest.mark.slow

LEADS = 500
CALLS = 50  # 10 events each: started, disclosed, 7 transcript lines, ended
LINES = 7
CLIENTS = 8
MAX_ATTEMPTS = 30
LOCK_SECONDS = 2
# Every wait of the test ends by then (a busy CI machine runs the burst in well under a minute).
DEADLINE_SECONDS = 600
NUMBER = "+493055501234"
SETUP = f"""
from console.numbers.services import number_create
from console.tenants.services import tenant_create
tenant = tenant_create(slug="acme", name="Acme", minute_cap=100000)
tenant.lead_rate_limit = 1_000_000
tenant.save()
number_create(tenant=tenant, e164="{NUMBER}")
"""
STATE = """
import json
from calls_app.models import Call, CarrierEvent, TranscriptEntry
from leads_app.models import Lead
print(json.dumps({
    "leads": list(Lead.objects.values_list("id", "phone")),
    "events": list(CarrierEvent.objects.values_list("event_id", "state")),
    "calls": list(Call.objects.values_list("carrier_call_id", "status", "seconds")),
    "lines": TranscriptEntry.objects.count(),
}))
"""


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    live = LiveService(tmp_path_factory.mktemp("faults"))
    try:
        live.migrate()
        live.manage("shell", "-v0", "-c", SETUP)
        live.secret = live.manage("create_carrier", "faultcarrier").split()[-1]
        yield live
    finally:
        live.stop()


def lead_jobs():
    for i in range(LEADS):
        phone = f"+4917{i:09d}"
        yield ("lead", phone, {"tenant": "acme", "kind": "callback", "phone": phone}, {"Idempotency-Key": f"k-{i}"})


def event_jobs():
    start = datetime.now(UTC) - timedelta(minutes=5)
    for call in range(CALLS):
        ccid = f"CA{call:04d}-{uuid.uuid4().hex[:8]}"

        def event(kind, data, n, ccid=ccid):
            return {"id": f"evt-{ccid}-{n}", "type": kind, "occurredAt": start.isoformat(), "data": data}

        events = [event("call.started", {"carrierCallId": ccid, "direction": "inbound", "from": "+491711234567",
                                         "to": NUMBER}, 0),
                  event("call.disclosed", {"carrierCallId": ccid}, 1)]
        events += [event("call.transcript", {"carrierCallId": ccid, "role": "user", "text": f"Satz {n}",
                                             "ts": (start + timedelta(seconds=n)).isoformat()}, 2 + n)
                   for n in range(LINES)]
        events.append(event("call.ended", {"carrierCallId": ccid, "status": "completed", "seconds": 61 + call}, 9))
        for body in events:
            yield ("event", body["id"], body, {})


class Burst:
    """Sends the jobs from CLIENTS threads, retrying as a client of the contract would,
    and lets fault injectors wait for progress (no sleeps as synchronisation)."""

    def __init__(self, base, secret):
        self.base, self.secret = base, secret
        self.deadline = time.monotonic() + DEADLINE_SECONDS
        self.finished = False
        self.fault_errors = []
        self.done, self.progress = 0, threading.Condition()
        self.broken = self.server_errors = self.retries = 0
        self.answers = {}  # (kind, name) -> (status, body) of the final answer
        self.figures = {}

    def send(self, job):
        kind, name, body, headers = job
        path = "/v2/public/leads" if kind == "lead" else "/voice/webhook/faultcarrier"
        raw = json.dumps(body).encode()
        for attempt in range(MAX_ATTEMPTS):
            if time.monotonic() > self.deadline:
                break
            if kind == "event":
                headers = {"X-Signature": signature_header(self.secret, raw)}
            answer = request("POST", self.base + path, raw, headers, timeout=60)
            if answer is not None and answer.status < 500:
                break
            with self.progress:
                self.retries += 1
                if answer is None:
                    self.broken += 1
                else:
                    self.server_errors += 1
            time.sleep(min(1.0, 0.05 * (attempt + 1)))  # a client's back-off, not synchronisation
        with self.progress:
            self.answers[(kind, name)] = (answer.status, answer.json()) if answer is not None else (None, None)
            self.done += 1
            self.progress.notify_all()

    def wait_for(self, done):
        """True once `done` requests have their answer; False if the burst ended first."""
        with self.progress:
            return self.progress.wait_for(lambda: self.done >= done or self.finished,
                                          timeout=max(0, self.deadline - time.monotonic())) and self.done >= done

    def _inject(self, injector):
        try:
            injector(self)
        except Exception as exc:  # noqa: BLE001 - reported by the test, not lost in a thread
            self.fault_errors.append(f"{injector.__qualname__}: {exc!r}")

    def run(self, jobs, injectors):
        started = time.monotonic()
        faults = [threading.Thread(target=self._inject, args=(injector,), daemon=True) for injector in injectors]
        for fault in faults:
            fault.start()
        try:
            with ThreadPoolExecutor(CLIENTS) as pool:
                list(pool.map(self.send, jobs))
        finally:
            with self.progress:
                self.finished = True
                self.progress.notify_all()
        for fault in faults:
            fault.join(timeout=120)
        self.figures["seconds"] = round(time.monotonic() - started, 1)


def interleaved():
    leads, events = list(lead_jobs()), list(event_jobs())
    return [job for pair in zip(leads, events, strict=True) for job in pair]


def kill_a_worker(service, master, base, at):
    """SIGKILL to a worker that is handling a request (one that holds a client
    connection), found within a bounded number of looks."""
    def inject(burst):
        assert burst.wait_for(at)
        for _ in range(200):
            busy = service.busy_workers(master, base)
            # Looked again once another request was answered: requests are in flight then.
            if busy or not burst.wait_for(burst.done + 1):
                break
        victim = busy[0] if busy else service.workers_of(master)[0]
        os.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()
        burst.figures["killed worker was mid-request"] = bool(busy)
        # Bounded wait until gunicorn has replaced it (the figure of the recovery).
        while time.monotonic() - killed_at < 60 and (
                victim in service.workers_of(master) or len(service.workers_of(master)) < 2):
            time.sleep(0.05)
        burst.figures["new worker forked after s"] = round(time.monotonic() - killed_at, 2)
    return inject


def lock_the_database(service, at):
    def inject(burst):
        assert burst.wait_for(at)
        if service.database_url.startswith("sqlite"):
            holder = sqlite3.connect(service.database_url.removeprefix("sqlite:///"), isolation_level=None)
            holder.execute("BEGIN EXCLUSIVE")
            time.sleep(LOCK_SECONDS)  # how long the fault lasts
            holder.execute("ROLLBACK")
            holder.close()
        else:
            import psycopg
            with psycopg.connect(service.database_url) as holder:
                # In the order the app's transactions take them (claim, lead; events
                # apart), so that waiting for them cannot deadlock with a request.
                holder.execute("LOCK TABLE calls_app_idempotencyrecord, leads_app_lead, calls_app_carrierevent "
                               "IN ACCESS EXCLUSIVE MODE")
                time.sleep(LOCK_SECONDS)
                holder.rollback()
        burst.figures["database locked for s"] = LOCK_SECONDS
    return inject


def drop_every_connection(service, at):
    """PostgreSQL only: the server ends every connection of the app (a restart or a
    failover looks the same to it)."""
    def inject(burst):
        assert burst.wait_for(at)
        import psycopg
        with psycopg.connect(service.database_url, autocommit=True) as admin:
            dropped = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                    "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchone()[0]
        burst.figures["connections dropped"] = dropped
    return inject


def test_killed_worker_and_locked_database_lose_and_double_nothing(service):
    base, master = service.start(workers=2)
    jobs = interleaved()
    injectors = [kill_a_worker(service, master, base, at=len(jobs) // 5),
                 lock_the_database(service, at=len(jobs) // 2)]
    if not service.database_url.startswith("sqlite"):
        injectors.append(drop_every_connection(service, at=len(jobs) * 3 // 4))
    burst = Burst(base, service.secret)
    burst.run(jobs, injectors)
    assert not burst.fault_errors, burst.fault_errors
    assert burst.figures["killed worker was mid-request"], "no worker was handling a request to kill"
    assert len(burst.figures) >= len(injectors) + 2, f"a fault was not injected: {burst.figures}"

    # Every request got its answer in the end, and a 2xx.
    failed = {job: answer for job, answer in burst.answers.items() if answer[0] is None or answer[0] >= 300}
    assert len(burst.answers) == len(jobs) and not failed, dict(list(failed.items())[:10])

    state = json.loads(service.manage("shell", "-v0", "-c", STATE).strip().splitlines()[-1])
    # Leads: exactly one row per post, with the id its (possibly replayed) 201 named.
    answered = {name: body["id"] for (kind, name), (_, body) in burst.answers.items() if kind == "lead"}
    stored = {phone: lead_id for lead_id, phone in state["leads"]}
    assert len(state["leads"]) == LEADS and stored == answered
    # Events: exactly the acknowledged ones, all applied, each call whole and booked once.
    acknowledged = {name for kind, name in burst.answers if kind == "event"}
    assert len(state["events"]) == CALLS * 10 and {event_id for event_id, _ in state["events"]} == acknowledged
    assert {event_state for _, event_state in state["events"]} == {"applied"}
    assert sorted(seconds for _, call_status, seconds in state["calls"] if call_status == "completed") == [
        61 + call for call in range(CALLS)]
    assert state["lines"] == CALLS * LINES
    usage = subprocess.run([sys.executable, "manage.py", "recompute_usage", "--dry-run"], cwd=PROJECT,
                           env=service.env, capture_output=True, text=True, timeout=120)
    assert usage.returncode == 0, usage.stdout + usage.stderr

    # The same server answers again, without a restart, with both workers.
    assert master.poll() is None and len(service.workers_of(master)) == 2
    assert request("GET", base + "/health").status == 200
    assert request("POST", base + "/v2/public/leads", {"tenant": "acme", "kind": "contact",
                                                       "phone": "0171 7654321"}).status == 201

    burst.figures.update(requests=len(jobs), retries=burst.retries, broken_connections=burst.broken,
                         server_errors=burst.server_errors,
                         requests_per_s=round(len(jobs) / burst.figures["seconds"], 1),
                         database=service.database_url.split(":")[0])
    print("FAULTS", json.dumps(burst.figures))
