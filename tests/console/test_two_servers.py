"""Two app servers, like two machines behind a proxy: two gunicorn processes on
loopback against one PostgreSQL and one Redis, requests alternating between them.
The lead limit is exact across both, an Idempotency-Key replays on the other server,
concurrent outbound calls never pass the cap, and a render of one is a hit on the other."""
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from tests.live_service import PROJECT, LiveService, request

pytestmark = pytest.mark.slow

if connection.vendor != "postgresql":
    pytest.skip("two app servers need a database server both reach: this run's DATABASE_URL is not PostgreSQL "
                "(CI's PostgreSQL run runs this)", allow_module_level=True)

LEAD_LIMIT = 7
CAP_MINUTES, CALL_MINUTES = 30, 10
SETUP = f"""
from console.tenants.models import Tenant
from console.tenants.services import tenant_create
for slug in ("acme", "globex"):
    tenant = tenant_create(slug=slug, name=slug.capitalize(), minute_cap={CAP_MINUTES})
    tenant.lead_rate_limit = {LEAD_LIMIT}
    tenant.max_call_minutes = {CALL_MINUTES}
    tenant.save()
"""


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    """CI's Redis (REDIS_URL), else one of our own on loopback."""
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    folder = tmp_path_factory.mktemp("redis")
    started = subprocess.run(["bash", ".ci/redis", "start", str(folder)], cwd=PROJECT, capture_output=True,
                             text=True, timeout=300, check=True)
    try:
        yield started.stdout.strip().split("=", 1)[1]
    finally:
        subprocess.run(["bash", ".ci/redis", "stop", str(folder)], cwd=PROJECT, timeout=60)


@pytest.fixture(scope="module")
def servers(tmp_path_factory, redis_url):
    live = LiveService(tmp_path_factory.mktemp("two-servers"))
    # Keys of this run only: an earlier run's rate-limit windows may still be in that Redis.
    live.env.update({"REDIS_URL": redis_url, "RENDER_CACHE_MAX_MB": "50", "CACHE_KEY_PREFIX": live.tmp.name})
    live.env.pop("CACHE_URL", None)  # Redis is the cache
    try:
        live.migrate()
        live.manage("shell", "-v0", "-c", SETUP)
        key = live.manage("create_api_key", "acme").split()[-1]
        first, _ = live.start()
        second, _ = live.start()
        headers = {"Authorization": f"Bearer {key}", "X-Tenant": "acme"}
        yield live, (first, second), headers
    finally:
        live.stop()


def alternate(bases, count):
    return [bases[i % 2] for i in range(count)]


def test_the_servers_share_the_redis_cache(servers):
    live, _, _ = servers
    out = live.manage("shell", "-v0", "-c", "from django.conf import settings; print(settings.CACHES['default'])")
    assert "RedisCache" in out


def test_the_lead_limit_is_exact_across_both_servers(servers):
    _, bases, _ = servers
    statuses = [request("POST", base + "/v2/public/leads",
                        {"tenant": "globex", "kind": "callback", "phone": f"0171 23456{i:02d}"}).status
                for i, base in enumerate(alternate(bases, LEAD_LIMIT + 5))]
    assert statuses == [201] * LEAD_LIMIT + [429] * 5, statuses


def test_an_idempotency_key_replays_on_the_other_server(servers):
    _, (first, second), _ = servers
    body = {"tenant": "acme", "kind": "callback", "phone": "0171 2345600"}
    original = request("POST", first + "/v2/public/leads", body, {"Idempotency-Key": "two-servers-1"})
    replay = request("POST", second + "/v2/public/leads", body, {"Idempotency-Key": "two-servers-1"})
    assert original.status == replay.status == 201
    assert replay.json()["id"] == original.json()["id"] and replay.headers.get("Idempotent-Replayed") == "true"


def test_concurrent_outbound_calls_on_both_servers_never_pass_the_cap(servers):
    _, bases, headers = servers
    # One number each: the same number within VOICE_CALL_DEDUP_WINDOW_SEC is one request.
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda job: request("POST", job[1] + "/voice/v1/calls", {"to": f"+4917112345{job[0]:02d}"},
                                                    headers, timeout=60), enumerate(alternate(bases, 8))))
    statuses = sorted(answer.status for answer in answers)
    allowed = CAP_MINUTES // CALL_MINUTES
    assert statuses == [201] * allowed + [402] * (8 - allowed), statuses


def test_a_render_of_one_server_is_served_from_the_shared_cache_by_the_other(servers):
    _, (first, second), headers = servers
    body = {"touchpoint": "call.hold"}
    made = request("POST", first + "/v2/audio/render", body, headers, timeout=60)
    served = request("POST", second + "/v2/audio/render", body, headers, timeout=60)
    assert (made.status, served.status) == (200, 200)
    assert (made.headers["X-Render-Cache"], served.headers["X-Render-Cache"]) == ("miss", "hit")
    assert served.body == made.body
