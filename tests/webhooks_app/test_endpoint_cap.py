"""The cap of webhook endpoints under real concurrency: requests at once through a live
server (one thread and one database connection each), on SQLite and PostgreSQL."""
import json
import threading
import urllib.error
import urllib.request

from console.credentials.services import api_key_create
from console.tenants.services import tenant_create
from webhooks_app.models import Endpoint

REQUESTS = 8


def post_endpoint(url, key, n, barrier):
    request = urllib.request.Request(
        f"{url}/v2/webhooks", method="POST",
        data=json.dumps({"url": f"https://hooks.racer.example/{n}", "event_types": ["lead.created"]}).encode(),
        headers={"Authorization": f"Bearer {key}", "X-Tenant": "racer", "Content-Type": "application/json"},
    )
    barrier.wait(timeout=30)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_parallel_creations_make_exactly_as_many_endpoints_as_the_cap(transactional_db, live_server, settings):
    settings.WEBHOOK_MAX_ENDPOINTS = 3
    tenant = tenant_create(slug="racer", name="Racer")
    key = api_key_create(tenant=tenant)[1]
    barrier = threading.Barrier(REQUESTS)
    results = [None] * REQUESTS

    def run(index):
        results[index] = post_endpoint(live_server.url, key, index, barrier)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(REQUESTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(status for status, _ in results) == [201] * 3 + [409] * (REQUESTS - 3), results
    assert all(body["error"]["code"] == "webhook_limit_reached" for status, body in results if status == 409)
    assert Endpoint.objects.filter(tenant=tenant).count() == 3
