"""The real job worker (`manage.py qcluster`, as `make run` starts it) killed while
it is sending a webhook: the delivery is not lost, it is sent again after a restart."""
import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.live_service import PROJECT, LiveService
from tests.receiver import Receiver

pytestmark = pytest.mark.slow
DEADLINE = 120

SETUP = """
from console.tenants.services import tenant_create
from webhooks_app.services import endpoint_create
tenant = tenant_create(slug="kill", name="Kill")
endpoint_create(tenant=tenant, url={url!r}, event_types=["lead.created"])
"""
NEW_LEAD = """
from console.tenants.models import Tenant
from leads_app.services import lead_create
print(lead_create(tenant=Tenant.objects.get(slug="kill"), kind="callback", phone="+491711234567").pk)
"""
STATE = """
from webhooks_app.models import Delivery
from webhooks_app.services import deliveries_sweep
deliveries_sweep()
delivery = Delivery.objects.get()
print(delivery.state, ",".join(a.outcome for a in delivery.attempt_set.order_by("number")))
"""


def start_worker(live):
    log = open(live.tmp / "worker.log", "a")
    return subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=PROJECT, env=live.env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def kill(process):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)


def test_a_worker_killed_mid_delivery_loses_nothing(tmp_path):
    receiver = Receiver([200], hold_first=True)
    live = LiveService(tmp_path)
    # An attempt holds its delivery for 3 s; the job queue hands out a lost job again after 5 s.
    live.env.update({"OUTBOUND_ALLOW_PRIVATE_TARGETS": "1", "WEBHOOK_TIMEOUT_SEC": "2",
                     "WEBHOOK_LEASE_EXTRA_SEC": "1", "JOB_TIMEOUT_SEC": "4"})
    workers = []
    try:
        live.migrate()
        live.manage("shell", "-v0", "-c", SETUP.format(url=receiver.url))
        workers.append(start_worker(live))
        live.manage("shell", "-v0", "-c", NEW_LEAD)
        assert receiver.arrived.wait(DEADLINE), (live.tmp / "worker.log").read_text()[-2000:]
        kill(workers[-1])  # mid-delivery: the receiver holds the request open
        receiver.release.set()
        workers.append(start_worker(live))
        deadline = time.monotonic() + DEADLINE
        state = ""
        while time.monotonic() < deadline:
            # What the periodic sweep does every minute, asked for now.
            state = live.manage("shell", "-v0", "-c", STATE).strip()
            if state.startswith("succeeded"):
                break
        assert state == "succeeded interrupted,succeeded", state
        ids = {headers["webhook-id"] for _, headers, _ in receiver.requests}
        assert len(receiver.requests) == 2 and len(ids) == 1
    finally:
        for worker in workers:
            kill(worker)
        receiver.stop()
        live.stop()
