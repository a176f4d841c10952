"""Outbound webhooks and several app servers: deliveries per second of one job worker,
the cost of recording deliveries on the request path, two servers against one."""
import contextlib
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from statistics import median

from bench.bench_leads import distinct_leads_script
from bench.harness import (
    ROOT,
    compare,
    create_tenant_with_key,
    gunicorn,
    sized,
    stop,
    temp_project,
    wrk,
)
from tests.receiver import Receiver

DELIVERIES = 300
LEAD = {"tenant": "bench", "kind": "callback", "phone": "0171 2345678"}
SUBSCRIBE = """
from console.tenants.models import Tenant
from webhooks_app.services import endpoint_create
Tenant.objects.filter(slug='bench').update(lead_rate_limit=100_000_000)
endpoint_create(tenant=Tenant.objects.get(slug='bench'), url={url!r}, event_types=["lead.created"])
"""
LEADS = """
from console.tenants.models import Tenant
from leads_app.services import lead_create
tenant = Tenant.objects.get(slug='bench')
for i in range({count}):
    lead_create(tenant=tenant, kind="callback", phone=f"+4917{{i:09d}}")
"""


def _project_with_endpoint(project, receiver):
    project.env.update({"OUTBOUND_ALLOW_PRIVATE_TARGETS": "1", "LEADS_NOTIFY_BY_EMAIL": "0"})
    create_tenant_with_key(project, "bench")
    project.django(SUBSCRIBE.format(url=receiver.url))


@contextlib.contextmanager
def _worker(project):
    log = open(project.tmp / "worker.log", "w")
    process = subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=ROOT,
                               env={**project.env, "JOB_WORKERS": "1"}, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        stop(process)
        log.close()


def deliveries_per_second(load):
    """Webhook deliveries per second: one job worker, a loopback receiver, the database queue."""
    receiver = Receiver([200])
    try:
        with temp_project() as project:
            _project_with_endpoint(project, receiver)
            deliveries = sized(DELIVERIES, 5)
            project.django(LEADS.format(count=deliveries))  # queued (no worker runs yet)
            started = time.monotonic()
            with _worker(project):
                deadline = started + 600
                while len(receiver.requests) < deliveries and time.monotonic() < deadline:
                    time.sleep(0.2)
                elapsed = time.monotonic() - started
            sent = len(receiver.requests)
            assert sent == deliveries, f"{sent} of {deliveries} deliveries arrived"
            return [{"deliveries": sent, "job workers": 1, "seconds (incl. worker start)": f"{elapsed:.1f}",
                     "deliveries/s": f"{sent / elapsed:.1f}"}]
    finally:
        receiver.stop()


def lead_posts_with_deliveries(load):
    """POST /v2/public/leads with a subscribed endpoint: deliveries recorded and queued vs WEBHOOKS_ENABLED=0."""
    receiver = Receiver([200])
    try:
        with temp_project() as project, contextlib.ExitStack() as servers:
            _project_with_endpoint(project, receiver)
            script = distinct_leads_script(project, LEAD)
            project.env["WEBHOOKS_ENABLED"] = "0"
            disabled = servers.enter_context(gunicorn(project, workers=2))
            project.env["WEBHOOKS_ENABLED"] = "1"
            enabled = servers.enter_context(gunicorn(project, workers=2))
            # The request path only: no worker sends meanwhile (the jobs wait in the queue).
            rows = compare("", [
                ("deliveries disabled (baseline)", disabled + "/v2/public/leads", None, script),
                ("deliveries enabled", enabled + "/v2/public/leads", None, script),
            ], load)
            queued = project.django("from webhooks_app.models import Delivery\nprint(Delivery.objects.count())\n")
            rows[1]["endpoint"] += f" ({queued.split()[-1]} deliveries recorded)"
            for row in rows:
                row["share of ceiling"] = row.pop("share of ceiling").replace("ceiling", "baseline")
            return rows
    finally:
        receiver.stop()


def two_servers_against_one(load):
    """Lead posts per second: two app servers (2 workers each, one database) against one."""
    with temp_project() as project, contextlib.ExitStack() as servers:
        project.env["LEADS_NOTIFY_BY_EMAIL"] = "0"
        create_tenant_with_key(project, "bench")
        project.django("from console.tenants.models import Tenant\n"
                       "Tenant.objects.filter(slug='bench').update(lead_rate_limit=100_000_000)\n")
        script = distinct_leads_script(project, LEAD)
        first = servers.enter_context(gunicorn(project, workers=2))
        second = servers.enter_context(gunicorn(project, workers=2))
        one, two = [], []
        for _ in range(load.rounds):
            one.append(wrk(first + "/v2/public/leads", load, script=script).requests_per_second)
            with ThreadPoolExecutor(max_workers=2) as pool:  # both at once, like clients of a proxy
                two.append(sum(pool.map(
                    lambda base: wrk(base + "/v2/public/leads", load, script=script).requests_per_second,
                    (first, second))))
        return [
            {"setup": "one server", "lead posts/s": f"{median(one):.0f}", "against one": "100%"},
            {"setup": "two servers (each its own wrk)", "lead posts/s": f"{median(two):.0f}",
             "against one": f"{median(b / a for a, b in zip(one, two, strict=True)):.0%}"},
        ]
