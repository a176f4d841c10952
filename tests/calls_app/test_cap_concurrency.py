"""The minute cap under real concurrency: N requests at once through a live server
(one thread and one database connection per request), on SQLite and PostgreSQL."""
import json
import threading
import urllib.error
import urllib.request

import pytest

from calls_app.models import Call, SimDial, UsageCounter
from console.credentials.services import api_key_create
from console.tenants.services import tenant_create

REQUESTS = 8


def post_outbound(url, key, barrier, idempotency_key=None, to="+491711234567"):
    headers = {"Authorization": f"Bearer {key}", "X-Tenant": "racer", "Content-Type": "application/json"}
    if idempotency_key:
        headers["Idempotency-Key"] = idempotency_key
    request = urllib.request.Request(
        f"{url}/voice/v1/calls", data=json.dumps({"to": to}).encode(), method="POST", headers=headers,
    )
    barrier.wait(timeout=30)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize("cap, longest, grants", [(6, 2, [120, 120, 120]), (5, 2, [120, 120, 60]), (4, 10, [240])])
def test_concurrent_requests_are_granted_exactly_what_the_cap_allows(transactional_db, live_server, cap, longest,
                                                                     grants):
    tenant = tenant_create(slug="racer", name="Racer", minute_cap=cap, max_call_minutes=longest)
    key = api_key_create(tenant=tenant)[1]
    barrier = threading.Barrier(REQUESTS)
    results = [None] * REQUESTS

    def run(index):
        # One number each: the same number within VOICE_CALL_DEDUP_WINDOW_SEC is one request.
        results[index] = post_outbound(live_server.url, key, barrier, to=f"+4917112345{index:02d}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(REQUESTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    statuses = sorted(status for status, _ in results)
    assert statuses == [201] * len(grants) + [402] * (REQUESTS - len(grants)), results
    assert sorted(body["maxSeconds"] for status, body in results if status == 201) == sorted(grants)
    assert all(body["error"]["code"] == "minute_cap_reached" for status, body in results if status == 402)
    assert UsageCounter.objects.get(tenant=tenant).reserved_minutes == cap
    assert Call.objects.filter(tenant=tenant).count() == len(grants)


def test_simultaneous_requests_with_one_idempotency_key_reserve_and_dial_once(transactional_db, live_server):
    tenant = tenant_create(slug="racer", name="Racer", minute_cap=100, max_call_minutes=10)
    key = api_key_create(tenant=tenant)[1]
    barrier = threading.Barrier(REQUESTS)
    results = [None] * REQUESTS

    def run(index):
        results[index] = post_outbound(live_server.url, key, barrier, idempotency_key="same-key")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(REQUESTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    # Each waited for the first one's transaction, then replayed its answer.
    assert [status for status, _ in results] == [201] * REQUESTS, results
    assert len({body["id"] for _, body in results}) == 1
    assert Call.objects.filter(tenant=tenant).count() == 1 and SimDial.objects.count() == 1
    assert UsageCounter.objects.get(tenant=tenant).reserved_minutes == 10
