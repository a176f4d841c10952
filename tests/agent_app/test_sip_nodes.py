"""Two Stimmwerk nodes behind a SIP load balancer, as docs/telephony.md sets them up
("Two nodes behind Kamailio's dispatcher"): real `kamailio` with the `dispatcher` module
in front (tests/sip/kamailio.py writes its config: round robin, OPTIONS probing, the
next node where one does not answer), two `manage.py sip_agent` processes on their own
loopback ports and RTP ranges sharing one scratch database (tests/live_service.py), and
real `baresip` phones calling the number through kamailio.

Calls spread over both nodes; the node holding a live call is killed (SIGKILL: it books
nothing, sends no BYE); the new calls are answered by the other node, and the
dispatcher's probing takes the dead one out; the dead node's live call is booked by the
sweep (calls_app's calls_orphaned_end, the periodic job) up to its last heartbeat, once.
The node started again is probed back in, and calls spread over both again."""
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from tests.live_service import PROJECT, LiveService
from tests.ports import worker_ports
from tests.sip.baresip import Phone
from tests.sip.kamailio import NODES, Kamailio, free_port, free_ports_among
from tests.sip.raw import Trunk

pytestmark = pytest.mark.slow
CALLED, UNKNOWN = "+4930111000", "+4930111999"
CALLERS = ("017612345678", "017612345679")

SETUP = f"""
from calls_app.services import carrier_create
from console.numbers.services import number_create
from console.tenants.services import tenant_create
tenant = tenant_create(slug="nodes", name="Nodes", minute_cap=100, max_call_minutes=10)
number_create(tenant=tenant, e164="{CALLED}")
carrier_create(carrier_id="edge", kind="sip", credentials={{"static": "1", "allow": "127.0.0.1"}})
"""

# The calls as the database has them now (the SIP Call-ID is the carrier's call id).
CALLS = """
import json
from calls_app.models import Call
print(json.dumps({call.carrier_call_id: {
    "status": call.status, "ended": call.ended_at is not None, "seconds": call.seconds,
    "at_beat": call.ended_at is not None and call.ended_at == call.heartbeat_at,
    "beat": (call.heartbeat_at - call.started_at).total_seconds() if call.heartbeat_at and call.started_at else None}
    for call in Call.objects.all()}))
"""

# The periodic job as the worker runs it, at a moment past the owners' timeout; twice.
SWEEP = """
import json
from datetime import timedelta
from django.conf import settings
from django.utils import timezone
from console.jobs.runner import run
later = timezone.now() + timedelta(seconds=settings.CALL_HEARTBEAT_TIMEOUT_SEC + 1)
first = run("calls_app.services.calls_orphaned_end", {"now": later}, 1, 1)
second = run("calls_app.services.calls_orphaned_end", {"now": later + timedelta(minutes=5)}, 1, 1)
print(json.dumps([first, second]))
"""


def _last_json(output: str):
    return json.loads(output.strip().splitlines()[-1])


def until(predicate, timeout: float, step: float = 0.3):
    """Polls `predicate` (another process's state) until it holds, bounded by `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


# The nodes' SIP ports, this xdist worker's share: below the kernel's ephemeral range, so
# that no outgoing connection of another process is given a killed node's port before
# the node is started again on it (the test's restart found one taken so).
NODE_PORTS = worker_ports(range(18600, 18640))


class Node:
    """One Stimmwerk node: `manage.py sip_agent` in a process of its own."""

    def __init__(self, service: LiveService, name: str, port: int) -> None:
        self.port, rtp = port, free_port()
        self.log = service.tmp / f"sip-{name}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "sip_agent", "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=PROJECT, env={**service.env, "SIP_RTP_PORTS": f"{rtp}-{rtp + 40}"},
            stdout=open(self.log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
        service.servers.append(self.proc)

    def ready(self) -> bool:
        """Whether the node answers INVITEs for the carrier: an INVITE from the load
        balancer's address for a number nobody has gets 404 (403 while the node has not
        read the carriers yet; nothing is booked either way)."""
        assert self.proc.poll() is None, self.log.read_text()[-2000:]
        trunk = Trunk(self.port)
        try:
            call_id, _ = trunk.invite(UNKNOWN, 40000)
            return trunk.final(call_id, timeout=1) == 404
        finally:
            trunk.close()

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)


@pytest.fixture
def nodes(tmp_path):
    # Each part is stopped even when a later one fails to start (no node or kamailio left over).
    with contextlib.ExitStack() as started:
        service = LiveService(tmp_path)
        started.callback(service.stop)  # the nodes too: they are the service's servers
        service.env.update({"CALL_HEARTBEAT_SEC": "0.5", "AGENT_IDLE_TIMEOUT_SEC": "600", "SIP_RELOAD_SEC": "0.5"})
        service.migrate()
        service.manage("shell", "-c", SETUP)
        a_port, b_port = free_ports_among(NODE_PORTS, 2)
        first, second = Node(service, "a", a_port), Node(service, "b", b_port)
        assert until(first.ready, 60) and until(second.ready, 60), "a node did not come up"
        passwords = {account: "Ca" + uuid.uuid4().hex[:10] for account in CALLERS}
        balancer = Kamailio(tmp_path / "kam", passwords, {CALLED: NODES}, nodes=(first.port, second.port))
        started.callback(balancer.stop)
        balancer.start()
        phones = []
        for index, (account, password) in enumerate(passwords.items()):
            phones.append(Phone(tmp_path / f"phone{index}", account, password, balancer.port))
            started.callback(phones[-1].stop)
            phones[-1].start()
        yield service, balancer, (first, second), phones


def answered_by(balancer: Kamailio, call_id: str) -> int | None:
    """The port of the node whose 200 answered the INVITE `call_id` (kamailio's sipdump)."""
    return next((m.peer_port for m in balancer.messages() if m.direction == "rcv" and m.status == 200
                 and m.cseq_method == "INVITE" and m.header("Call-ID") == call_id), None)


def sent_to(balancer: Kamailio, call_id: str) -> list[int]:
    """The ports kamailio sent the INVITE `call_id` to, in order (each once: UDP retransmits)."""
    return list(dict.fromkeys(m.peer_port for m in balancer.messages() if m.direction == "snd"
                              and m.method == "INVITE" and m.header("Call-ID") == call_id))


def call(phone: Phone, balancer: Kamailio, *, hang_up: bool = True) -> tuple[str, int]:
    """Dials the number through the balancer until the agent's opening was heard; its
    SIP Call-ID and the node that answered."""
    since = phone.dial(CALLED)
    established = phone.wait_event("CALL_ESTABLISHED", 30, since)
    assert established, phone.events[-6:]
    assert phone.wait_far_end_quiet(60), "the agent's opening was not heard"
    if hang_up:
        phone.hang_up(since)
    call_id = established["id"]
    node = until(lambda: answered_by(balancer, call_id), 10)
    assert node, f"no 200 for {call_id} in kamailio's dump"
    return call_id, node


def test_calls_spread_a_killed_node_s_calls_go_to_the_other_and_its_live_call_is_swept(nodes):
    service, balancer, (first, second), (phone, other_phone) = nodes
    by_port = {first.port: first, second.port: second}

    def calls() -> dict:
        return _last_json(service.manage("shell", "-c", CALLS))

    # Round robin: a call, a live one, a call: the live one on the other node.
    before = [call(other_phone, balancer)]
    live, dead_port = call(phone, balancer, hang_up=False)
    before.append(call(other_phone, balancer))
    assert {before[0][1], dead_port} == {first.port, second.port} and before[1][1] == before[0][1], (before, dead_port)
    dead, survivor = by_port[dead_port], by_port[before[0][1]]
    # The live call's node writes heartbeats (a second or more of them after the start).
    assert until(lambda: (beat := calls().get(live[:64], {}).get("beat")) is not None and beat >= 1, 60)

    # Killed: round robin points the next call at it, dialled at once (probing needs a
    # ping sent after the kill to time out, fr_timer 5 s, to notice): kamailio's INVITE
    # to the dead node gets no answer, the failure route marks the node down and sends
    # the call to the survivor.
    dead.kill()
    killed_at = time.time()  # kamailio's dump is timed by the same clock
    after = [call(other_phone, balancer)]
    assert after[0][1] == survivor.port and sent_to(balancer, after[0][0]) == [dead.port, survivor.port]
    # The next call goes straight to the survivor; the dead node stays out (the
    # dispatcher's OPTIONS probing gets no answer from it, the survivor's 200s).
    after.append(call(other_phone, balancer))
    assert after[1][1] == survivor.port and sent_to(balancer, after[1][0]) == [survivor.port]
    since_kill = [m for m in balancer.messages() if m.at > killed_at]
    assert any(m.direction == "snd" and m.method == "OPTIONS" and m.peer_port == dead.port for m in since_kill)
    assert not any(m.direction == "rcv" and m.peer_port == dead.port for m in since_kill)
    assert any(m.direction == "rcv" and m.cseq_method == "OPTIONS" and m.status == 200
               and m.peer_port == survivor.port for m in since_kill)
    log = balancer.dir / "kamailio.log"
    assert f"node down sip:127.0.0.1:{dead.port} at" in log.read_text(errors="replace")
    assert f"node down sip:127.0.0.1:{survivor.port} at" not in log.read_text(errors="replace")

    # Every call but the live one was booked by its node; the live one is still under way.
    booked = until(lambda: (found := calls()) and all(found.get(c[:64], {}).get("ended")
                                                      for c, _ in before + after) and found, 60)
    assert booked, calls()
    assert all(booked[c[:64]]["status"] == "completed" and booked[c[:64]]["seconds"] > 0 for c, _ in before + after)
    assert not booked[live[:64]]["ended"] and booked[live[:64]]["status"] == "active"

    # The sweep books it up to its last heartbeat, once.
    assert _last_json(service.manage("shell", "-c", SWEEP)) == [1, 0]
    swept = calls()[live[:64]]
    assert (swept["status"], swept["ended"], swept["at_beat"]) == ("completed", True, True)
    assert swept["seconds"] == round(swept["beat"]) >= 1

    # Started again on its port: probing puts it back, and calls spread over both again.
    logged = len(log.read_bytes())
    back = Node(service, "again", dead.port)
    assert until(back.ready, 60), "the node did not come up again"
    assert until(lambda: f"node up sip:127.0.0.1:{dead.port} at".encode() in log.read_bytes()[logged:], 30)
    # (A ping sent while it was dead times out fr_timer later and may take it out again
    # until the next ping's answer, so a call may still miss it: up to four calls.)
    again: list[tuple[str, int]] = []
    while len(again) < 4 and not any(node == dead.port for _, node in again):
        again.append(call(other_phone, balancer))
    assert any(node == dead.port for _, node in again), again
