"""Calls: the carrier webhook's hot path, reads at 1,000 and 100,000 calls, and the
minute-cap grant under 20 concurrent requesters. 2 gunicorn workers, SQLite."""
import hashlib
import hmac
import http.client
import json
import subprocess
import threading
import time
import urllib.parse
from statistics import median

from bench.harness import compare, create_tenant_with_key, gunicorn, parse_wrk, temp_project

WEBHOOK_CLIENTS = 16
WEBHOOK_EVENTS = 6000
GRANT_REQUESTERS = 20
GRANTS_EACH = 25

_SETUP = """
from calls_app.services import carrier_create
from console.numbers.services import number_create
from console.tenants.models import Tenant
tenant = Tenant.objects.get(slug="bench")
tenant.minute_cap = 2_000_000_000
tenant.max_call_minutes = 1
tenant.save()
number_create(tenant=tenant, e164="+493055501234")
carrier, secret = carrier_create(carrier_id="bench")
print(secret)
"""

# Adds calls (two transcript lines each) until the tenant has `total`.
_SEED = """
import datetime as dt
from calls_app.models import Call, TranscriptEntry
from console.tenants.models import Tenant
tenant = Tenant.objects.get(slug="bench")
have = Call.objects.filter(tenant=tenant).count()
now = dt.datetime.now(dt.timezone.utc)
for start in range(have, {total}, 5000):
    calls = Call.objects.bulk_create(
        Call(tenant=tenant, carrier_id="bench", carrier_call_id=f"SEED{{n}}", direction="inbound",
             from_e164="+491711234567", to_e164="+493055501234", status="completed", seconds=61, disclosed=True,
             started_at=now, ended_at=now)
        for n in range(start, min(start + 5000, {total})))
    TranscriptEntry.objects.bulk_create(
        TranscriptEntry(call=call, role=role, text=text, ts=now)
        for call in calls for role, text in (("assistant", "Guten Tag, wie kann ich helfen?"),
                                             ("user", "Ich hätte gern einen Rückruf.")))
"""


def _setup(project):
    key = create_tenant_with_key(project, "bench")
    secret = project.django(_SETUP).strip().splitlines()[-1]
    return {"Authorization": f"Bearer {key}", "X-Tenant": "bench"}, secret


def _signed_events(secret, count):
    """Transcript events of one started call, each with its own id, signed now (valid 300 s)."""
    started = {"id": "bench-start", "type": "call.started", "occurredAt": "2025-03-01T10:00:00Z",
               "data": {"carrierCallId": "BENCH", "direction": "inbound", "from": "+491711234567",
                        "to": "+493055501234"}}
    events = [started] + [
        {"id": f"bench-{n}", "type": "call.transcript", "occurredAt": "2025-03-01T10:00:01Z",
         "data": {"carrierCallId": "BENCH", "role": "user" if n % 2 else "assistant",
                  "text": "Ich hätte gern einen Termin am Dienstag.", "ts": "2025-03-01T10:00:01Z"}}
        for n in range(count)]
    bodies = [json.dumps(e).encode() for e in events]
    now = int(time.time())
    # Signed as a carrier signs (CONTRACT §5), independently of the project's code.
    return [(body, f"t={now},v1={hmac.new(secret.encode(), f'{now}.'.encode() + body, hashlib.sha256).hexdigest()}")
            for body in bodies]


def _post_all(base_url, path, requests, clients):
    """Sends `requests` [(body, headers)] from `clients` threads; returns (seconds, latencies, statuses)."""
    target = urllib.parse.urlsplit(base_url)
    lock, cursor = threading.Lock(), iter(requests)
    latencies, statuses = [], []
    barrier = threading.Barrier(clients + 1)

    def client():
        barrier.wait()
        while True:
            with lock:
                item = next(cursor, None)
            if item is None:
                return
            body, headers = item
            connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            began = time.perf_counter()
            connection.request("POST", path, body=body, headers={"Content-Type": "application/json", **headers})
            status = connection.getresponse().status
            elapsed = time.perf_counter() - began
            connection.close()
            with lock:
                latencies.append(elapsed)
                statuses.append(status)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - began, sorted(latencies), statuses


def _percentile(sorted_values, share):
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * share))] * 1000


def webhook(load):
    """Carrier webhook: signed call.transcript events per second (16 client threads)."""
    with temp_project() as project:
        headers, secret = _setup(project)
        signed = _signed_events(secret, WEBHOOK_EVENTS)
        with gunicorn(project) as base_url:
            path = "/voice/webhook/bench"
            _post_all(base_url, path, [(b, {"X-Signature": s}) for b, s in signed[:1]], 1)
            health = _post_all(base_url, "/health", [(b"", {})] * 2000, WEBHOOK_CLIENTS)
            took, latencies, statuses = _post_all(
                base_url, path, [(b, {"X-Signature": s}) for b, s in signed[1:]], WEBHOOK_CLIENTS)
    assert set(statuses) == {200}, set(statuses)
    assert set(health[2]) == {405}  # POST /health: the cheapest full round trip, the ceiling
    return [
        {"what": "POST /health (405, ceiling)", "req/s": f"{len(health[1]) / health[0]:.0f}",
         "p50 ms": f"{_percentile(health[1], .5):.2f}", "p99 ms": f"{_percentile(health[1], .99):.2f}"},
        {"what": f"call.transcript events ({WEBHOOK_EVENTS})", "req/s": f"{len(latencies) / took:.0f}",
         "p50 ms": f"{_percentile(latencies, .5):.2f}", "p99 ms": f"{_percentile(latencies, .99):.2f}"},
    ]


def _wrk_post_script(tmp, headers):
    lines = ['wrk.method = "POST"', f'wrk.body = {json.dumps(json.dumps({"to": "+491711234567"}))}',
             'wrk.headers["Content-Type"] = "application/json"']
    lines += [f'wrk.headers["{name}"] = "{value}"' for name, value in headers.items()]
    path = tmp / "outbound.lua"
    path.write_text("\n".join(lines) + "\n")
    return path


def reads_by_size(load):
    """Usage, cap check and GET /v2/calls?limit=200 at 1,000 and 100,000 calls (wrk)."""
    rows = []
    with temp_project() as project:
        headers, _secret = _setup(project)
        script = _wrk_post_script(project.tmp, headers)
        for total in (1_000, 100_000):
            project.django(_SEED.format(total=total))
            with gunicorn(project) as base_url:
                table = compare(base_url, [
                    ("GET /health (ceiling)", "/health", {}),
                    ("GET /v2/usage", "/v2/usage", headers),
                    ("GET /v2/calls?limit=200", "/v2/calls?limit=200", headers),
                ], load)
                grant = _wrk_script(base_url + "/voice/v1/calls", load, script)
            for row in table:
                rows.append({"calls": f"{total:,}", **{k: v for k, v in row.items() if not k.startswith("_")}})
            rows.append({"calls": f"{total:,}", "endpoint": "POST /voice/v1/calls (cap check + grant)",
                         "req/s": f"{grant.requests_per_second:.0f}", "p50 ms": f"{grant.p50_ms:.2f}",
                         "p99 ms": f"{grant.p99_ms:.2f}", "share of ceiling": ""})
    return rows


def _wrk_script(url, load, script):
    command = ["wrk", f"-t{load.threads}", f"-c{load.connections}", f"-d{load.duration}s", "--latency",
               "-s", str(script), url]
    result = subprocess.run(command, capture_output=True, text=True, timeout=load.duration + 60)
    return parse_wrk(result.stdout)


def grants(load):
    """Outbound grants: 20 concurrent requesters, each placing 25 calls in a row."""
    with temp_project() as project:
        headers, _secret = _setup(project)
        body = json.dumps({"to": "+491711234567"}).encode()
        with gunicorn(project) as base_url:
            _post_all(base_url, "/voice/v1/calls", [(body, headers)] * 20, 4)  # warm both workers
            took, latencies, statuses = _post_all(
                base_url, "/voice/v1/calls", [(body, headers)] * (GRANT_REQUESTERS * GRANTS_EACH), GRANT_REQUESTERS)
    assert set(statuses) == {201}, set(statuses)
    return [{"requesters": GRANT_REQUESTERS, "grants": len(latencies), "grants/s": f"{len(latencies) / took:.0f}",
             "p50 ms": f"{_percentile(latencies, .5):.2f}", "p99 ms": f"{_percentile(latencies, .99):.2f}",
             "median ms": f"{median(latencies) * 1000:.2f}"}]
