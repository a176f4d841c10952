"""POST /widget/voice-demo/session: the open page's grants are rate-limited per client
address and per tenant (the leads' exact limiter) and each reserves few minutes."""
import pytest

from agent_app.models import AgentSession
from calls_app.models import Call, UsageCounter
from console.tenants.services import tenant_create
from leads_app import ratelimit
from tests.conftest import error_of

URL = "/widget/voice-demo/session"
pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(settings, monkeypatch):
    """The demo tenant with the page on, counting in the database (also in a run whose
    cache is Redis) at a fixed moment inside one window."""
    settings.AGENT_VOICE_DEMO = True
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    monkeypatch.setattr(ratelimit.time, "time", lambda: 1_800_000_000.0)  # a window start
    return tenant_create(slug="demo", name="Demo Praxis GmbH")


def _ask(client, address="198.51.100.7"):
    return client.post(URL, REMOTE_ADDR=address)


def test_one_client_gets_its_sessions_then_429_with_retry_after(client, demo, settings):
    settings.AGENT_DEMO_SESSIONS_PER_CLIENT = 3
    assert [_ask(client).status_code for _ in range(3)] == [201] * 3

    refused = _ask(client)

    assert refused.status_code == 429
    assert error_of(refused)["code"] == "rate_limited"
    assert 1 <= int(refused["Retry-After"]) <= settings.AGENT_DEMO_RATE_WINDOW_SEC
    assert AgentSession.objects.count() == 3  # the refused grant reserved nothing
    assert _ask(client, "198.51.100.8").status_code == 201  # another client still gets one


def test_the_tenant_limit_holds_across_clients(client, demo, settings):
    settings.AGENT_DEMO_SESSIONS_PER_TENANT = 4
    statuses = [_ask(client, f"198.51.100.{n}").status_code for n in range(1, 7)]

    assert statuses == [201] * 4 + [429] * 2
    assert Call.objects.filter(tenant=demo).count() == 4


def test_a_client_refused_by_its_own_limit_uses_nothing_of_the_tenants(client, demo, settings):
    settings.AGENT_DEMO_SESSIONS_PER_CLIENT, settings.AGENT_DEMO_SESSIONS_PER_TENANT = 1, 2
    assert _ask(client).status_code == 201
    assert [_ask(client).status_code for _ in range(5)] == [429] * 5

    assert _ask(client, "198.51.100.99").status_code == 201


def test_a_demo_grant_reserves_at_most_the_demo_minutes(client, demo, settings):
    settings.AGENT_DEMO_MAX_MINUTES = 2
    assert demo.max_call_minutes > 2  # the cap below the tenant's own per-call limit applies

    body = _ask(client).json()

    call = Call.objects.get(pk=body["callId"])
    assert (call.reserved_minutes, call.max_seconds) == (2, 120)
    assert UsageCounter.objects.get(tenant=demo).reserved_minutes == 2


def test_the_api_grant_keeps_the_tenants_per_call_limit(api_a, tenant_a, settings):
    settings.AGENT_DEMO_MAX_MINUTES = 1  # the demo page's cap, not the API's
    body = api_a.post("/api/voice/agent/sessions", {}, format="json").json()
    assert body["maxSeconds"] == 60 * min(tenant_a.minute_cap, tenant_a.max_call_minutes) > 60
