"""A voice agent server killed mid-session (kill -9: no disconnect, no end, nothing
booked by it) leaves its call under way; the sweep (the periodic job) books it up to its
last heartbeat, once (issue 31, finding 6).

A real uvicorn process serves the WebSocket, on a scratch database of the run's vendor
(tests/live_service.py); the test reads and sweeps that database through manage.py."""
import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.agent_app.conftest import Caller, dial
from tests.live_service import PROJECT, START_TIMEOUT, LiveService, free_port, request

pytestmark = pytest.mark.slow

SETUP = """
import json
from console.tenants.services import tenant_create
from agent_app.services import agent_session_create
tenant = tenant_create(slug="killed", name="Killed", minute_cap=100, max_call_minutes=10)
session, token = agent_session_create(tenant=tenant)
print(json.dumps({"token": token, "call": session.call_id}))
"""

# Waits (bounded) until the owner has written a heartbeat a second or more after the
# start, so that the call has talk time to book; prints the call.
BEATING = """
import json, time
from calls_app.models import Call
deadline = time.monotonic() + 60
while True:
    call = Call.objects.get(pk=%r)
    if call.heartbeat_at and (call.heartbeat_at - call.started_at).total_seconds() >= 1:
        break
    assert time.monotonic() < deadline, "no heartbeat after the start within 60 s"
    time.sleep(0.2)  # polling another process's writes, bounded by the deadline
print(json.dumps({"status": call.status}))
"""

# The periodic job as the worker runs it, at a moment after the owner's timeout; twice.
SWEEP = """
import json
from datetime import timedelta
from django.conf import settings
from django.utils import timezone
from calls_app.models import Call, UsageCounter
from console.jobs.runner import run

def state():
    call = Call.objects.get(pk=%r)
    counter = UsageCounter.objects.get(tenant=call.tenant)
    return {"status": call.status, "seconds": call.seconds, "ended": call.ended_at == call.heartbeat_at,
            "beat": round((call.heartbeat_at - call.started_at).total_seconds()),
            "counter": [counter.calls, counter.seconds, counter.reserved_minutes]}

before = state()
later = timezone.now() + timedelta(seconds=settings.CALL_HEARTBEAT_TIMEOUT_SEC + 1)
first = run("calls_app.services.calls_orphaned_end", {"now": later}, 1, 1)
after = state()
second = run("calls_app.services.calls_orphaned_end", {"now": later + timedelta(minutes=5)}, 1, 1)
print(json.dumps({"before": before, "first": first, "after": after, "second": second, "again": state()}))
"""


def _last_json(output):
    return json.loads(output.strip().splitlines()[-1])


def _start_uvicorn(service):
    port = free_port()
    log = open(service.tmp / f"uvicorn-{port}.log", "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "console.asgi:application", "--host", "127.0.0.1", "--port", str(port),
         "--ws", "websockets-sansio", "--lifespan", "off", "--log-level", "warning"],
        cwd=PROJECT, env=service.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    service.servers.append(process)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"uvicorn exited: {(service.tmp / f'uvicorn-{port}.log').read_text()[-1500:]}")
        answer = request("GET", f"http://127.0.0.1:{port}/health", timeout=5)
        if answer is not None:
            return port, process
        time.sleep(0.2)  # polling the new server until it answers, bounded by the deadline
    raise RuntimeError(f"uvicorn did not answer within {START_TIMEOUT} s")


@pytest.fixture
def service(tmp_path):
    service = LiveService(tmp_path)
    service.env.update({"CALL_HEARTBEAT_SEC": "0.5", "AGENT_IDLE_TIMEOUT_SEC": "600"})
    service.migrate()
    yield service
    service.stop()


def test_a_session_on_a_killed_server_is_booked_by_the_sweep(service):
    session = _last_json(service.manage("shell", "-c", SETUP))
    port, uvicorn = _start_uvicorn(service)

    async def talk_then_kill():
        async with dial(f"ws://127.0.0.1:{port}/api/voice/agent?token={session['token']}") as ws:
            await Caller(ws).until("agent.done")  # the opening was spoken: the session is live
            beating = _last_json(await asyncio.to_thread(service.manage, "shell", "-c", BEATING % session["call"]))
            assert beating == {"status": "active"}
            os.kill(uvicorn.pid, signal.SIGKILL)
            await asyncio.to_thread(uvicorn.wait, 30)

    asyncio.run(talk_then_kill())
    assert uvicorn.returncode == -signal.SIGKILL
    outcome = _last_json(service.manage("shell", "-c", SWEEP % session["call"]))

    # Killed: the server booked nothing, the call was still under way with its minutes held.
    before = outcome["before"]
    assert before["status"] == "active" and before["counter"][:2] == [0, 0] and before["counter"][2] > 0
    # The sweep ended it, booked up to its last heartbeat, and released the reservation.
    after = outcome["after"]
    assert outcome["first"] == 1
    assert after["status"] == "completed" and after["ended"] and after["seconds"] == after["beat"] >= 1
    assert after["counter"] == [1, after["seconds"], 0]
    # Once: a second run finds nothing and changes nothing.
    assert outcome["second"] == 0 and outcome["again"] == after
