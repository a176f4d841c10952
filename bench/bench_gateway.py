"""The AI gateway: what routing, failover bookkeeping and usage accounting add to an
answer of the mock, and how long failing over from a dead or a slow lane takes."""
import json
from dataclasses import replace

from bench.harness import compare, gunicorn, json_request_script, temp_project

TOKEN = "bench-gateway-token-0123456789abcdef"
PROMPT = "Wann haben Sie am Samstag geöffnet?"

# Run in the project's Django (manage.py shell): each figure is a median over many calls.
_OVERHEAD = """
import json, statistics, time
from gateway_app.providers.mock import mock_answer
from gateway_app.services import gateway_agent_answer
from registry_app.demo import seed

seed(None)  # the shipped registry, as make run has it
prompt = {prompt!r}

def timed(call, count):
    samples = []
    for _ in range(count):
        started = time.perf_counter(); call(); samples.append(time.perf_counter() - started)
    samples.sort()
    return samples[len(samples) // 2], samples[int(len(samples) * 0.99) - 1]

answer = gateway_agent_answer(prompt=prompt)
assert answer.mode == "mock", answer
for _ in range(200):  # warm: the registry snapshot, the routes, the connection
    gateway_agent_answer(prompt=prompt)
mock = timed(lambda: mock_answer(prompt), 5000)
service = timed(lambda: gateway_agent_answer(prompt=prompt), 2000)
print(json.dumps({{"lane": answer.lane, "mock": mock, "service": service}}))
"""

_FAILOVER = """
import json, socket, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from django.conf import settings
from registry_app.services import registry_load
from registry_app.demo import SHIPPED_DOCUMENT
from registry_app.models import LaneCooldown
from registry_app.routing import invalidate_lane_state
from gateway_app.services import gateway_agent_answer

release = threading.Event()

class Slow(BaseHTTPRequestHandler):
    def do_POST(self):
        release.wait(30)  # never answers in time
    def log_message(self, *args):
        pass

slow = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
slow.daemon_threads = True
threading.Thread(target=slow.serve_forever, daemon=True).start()
with socket.socket() as closed:
    closed.bind(("127.0.0.1", 0))
    dead_port = closed.getsockname()[1]

document = json.loads(SHIPPED_DOCUMENT.read_text())
mock = next(entry for entry in document["models"] if entry["id"] == "chat-gateway-mock")

def lane(lane_id, url):
    return dict(mock, id=lane_id, name=lane_id, endpoint=url, health=None, priority=1, params={{"model": "x"}})

def clear():
    LaneCooldown.objects.all().delete()
    invalidate_lane_state()

def load(*first):
    registry_load(document=dict(document, models=[*first, mock]), loaded_by="bench")
    clear()

def median_ms(count, before=None):
    samples = []
    for _ in range(count):
        if before:
            before()
        started = time.perf_counter()
        answer = gateway_agent_answer(prompt="ping")
        samples.append((time.perf_counter() - started) * 1000)
        assert answer.lane == "chat-gateway-mock", answer
    samples.sort()
    return samples[len(samples) // 2], answer

settings.GATEWAY_MODE = "live"
settings.GATEWAY_TIMEOUT_SEC = {timeout}
load()
for _ in range(50):
    gateway_agent_answer(prompt="ping")
baseline, _ = median_ms(300)
load(lane("chat-dead", f"http://127.0.0.1:{{dead_port}}/v1/chat/completions"))
settings.GATEWAY_COOLDOWN_SEC = 0  # a cooldown that ends at once: the dead lane is tried (and recorded) every time
dead, answer = median_ms(300)
assert [a.outcome for a in answer.attempts] == ["connection_error", "ok"], answer.attempts
settings.GATEWAY_COOLDOWN_SEC = 30
gateway_agent_answer(prompt="ping")
dead_cooling, answer = median_ms(300)  # in its cooldown: the lane is skipped
assert [a.outcome for a in answer.attempts] == ["cooldown", "ok"], answer.attempts
settings.GATEWAY_COOLDOWN_SEC = 0
load(lane("chat-slow", f"http://127.0.0.1:{{slow.server_address[1]}}/v1/chat/completions"))
slow_ms, answer = median_ms(5, before=clear)
assert [a.outcome for a in answer.attempts] == ["timeout", "ok"], answer.attempts
release.set()
print(json.dumps({{"baseline": baseline, "dead": dead, "dead_cooling": dead_cooling, "slow": slow_ms}}))
"""


def _gateway_project_env(project):
    project.env["GATEWAY_STATIC_TOKEN"] = TOKEN
    project.env["GATEWAY_MODE"] = "mock"


def overhead(load):
    """Gateway overhead in mock mode (shipped registry): the service and POST /v1/agent against the mock itself."""
    with temp_project() as project:
        _gateway_project_env(project)
        timings = json.loads(project.django(_OVERHEAD.format(prompt=PROMPT)).strip().splitlines()[-1])
        mock_p50, mock_p99 = timings["mock"]
        service_p50, service_p99 = timings["service"]
        rows = [
            {"path": "the mock rule set, called directly (baseline)", "p50 ms": f"{mock_p50 * 1000:.3f}",
             "p99 ms": f"{mock_p99 * 1000:.3f}", "added p50 ms": "—"},
            {"path": f"gateway service in process: route, try, usage (answers as {timings['lane']})",
             "p50 ms": f"{service_p50 * 1000:.3f}", "p99 ms": f"{service_p99 * 1000:.3f}",
             "added p50 ms": f"{(service_p50 - mock_p50) * 1000:.3f}"},
        ]
        # Over HTTP, one connection per worker: latency, not queueing.
        latency_load = replace(load, connections=2, threads=2)
        script = json_request_script(project, "agent", "POST", {"prompt": PROMPT})
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with gunicorn(project, workers=2) as base_url:
            http = compare(base_url, [("bare view (ceiling)", "/__bench__/empty", None),
                                      ("POST /v1/agent", "/v1/agent", headers, script)], latency_load)
        added = float(http[1]["p50 ms"]) - float(http[0]["p50 ms"])
        for row, label in zip(http, ["bare Django view over HTTP (same run)",
                                     "POST /v1/agent over HTTP (gunicorn, 2 workers)"], strict=True):
            rows.append({"path": f"{label}: {row['req/s']} req/s", "p50 ms": row["p50 ms"], "p99 ms": row["p99 ms"],
                         "added p50 ms": "—" if row is http[0] else f"{added:.3f}", "_rounds": row["_rounds"]})
        return rows


def failover(load, timeout=1.0):
    """Failover to the next lane: from a dead lane (connection refused) and from a slow one (timeout 1 s)."""
    with temp_project() as project:
        _gateway_project_env(project)
        figures = json.loads(project.django(_FAILOVER.format(timeout=timeout)).strip().splitlines()[-1])
    base = figures["baseline"]
    return [
        {"first lane": "none (the mock answers at once; baseline)", "p50 ms": f"{base:.2f}", "added ms": "—"},
        {"first lane": "dead: connection refused, tried every request", "p50 ms": f"{figures['dead']:.2f}",
         "added ms": f"{figures['dead'] - base:.2f}"},
        {"first lane": "dead, then in its cooldown (skipped)", "p50 ms": f"{figures['dead_cooling']:.2f}",
         "added ms": f"{figures['dead_cooling'] - base:.2f}"},
        {"first lane": f"slow: no answer, GATEWAY_TIMEOUT_SEC={timeout:g}", "p50 ms": f"{figures['slow']:.1f}",
         "added ms": f"{figures['slow'] - base:.1f}"},
    ]
