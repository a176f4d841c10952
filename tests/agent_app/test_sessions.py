"""POST /api/voice/agent/sessions: the grant of a voice agent session."""
from datetime import timedelta

import pytest
from django.utils import timezone

from agent_app.models import AgentSession
from agent_app.services import agent_session_create, token_digest
from calls_app.models import Call, UsageCounter
from console.assistants.models import Assistant
from tests.conftest import error_of, make_client

URL = "/api/voice/agent/sessions"


def _reserved(tenant):
    counter = UsageCounter.objects.filter(tenant=tenant).first()
    return counter.reserved_minutes if counter else 0


def test_a_session_is_granted_with_a_single_use_token_and_reserves_minutes_like_a_call(api_a, tenant_a):
    before = timezone.now()
    response = api_a.post(URL, {}, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["audio"] == {"encoding": "pcm_s16le", "sampleRate": 16000, "channels": 1}
    assert body["url"] == f"ws://testserver/api/voice/agent?token={body['token']}"
    session = AgentSession.objects.get(pk=body["sessionId"])
    # Only the token's digest is stored.
    assert session.token_digest == token_digest(body["token"]) != body["token"]
    assert before + timedelta(seconds=59) < session.expires_at <= timezone.now() + timedelta(seconds=60)
    call = Call.objects.get(pk=body["callId"])
    assert (call.direction, call.carrier_id, call.status) == ("inbound", "web", "queued")
    assert call.max_seconds == body["maxSeconds"] == 60 * min(tenant_a.minute_cap, tenant_a.max_call_minutes)
    assert _reserved(tenant_a) == call.reserved_minutes > 0


def test_mulaw_at_8khz_can_be_asked_for(api_a):
    response = api_a.post(URL, {"audio": {"encoding": "mulaw", "sampleRate": 8000}}, format="json")
    assert response.status_code == 201
    assert response.json()["audio"] == {"encoding": "mulaw", "sampleRate": 8000, "channels": 1}


def test_the_ws_url_follows_agent_ws_url_when_the_websocket_is_served_elsewhere(api_a, settings):
    settings.AGENT_WS_URL = "ws://127.0.0.1:8001/"
    body = api_a.post(URL, {}, format="json").json()
    assert body["url"] == f"ws://127.0.0.1:8001/api/voice/agent?token={body['token']}"


@pytest.mark.parametrize("body, field", [
    ({"audio": {"encoding": "mulaw", "sampleRate": 16000}}, "audio"),
    ({"audio": {"encoding": "opus"}}, "audio"),
    ({"language": "Deutsch"}, "language"),
    ({"variables": ["x"]}, "variables"),
    ({"surprise": 1}, "surprise"),
])
def test_invalid_requests_are_refused_and_reserve_nothing(api_a, tenant_a, body, field):
    response = api_a.post(URL, body, format="json")
    assert response.status_code == 400
    assert field in error_of(response)["details"]
    assert not Call.objects.exists() and _reserved(tenant_a) == 0


def test_an_exhausted_minute_cap_refuses_the_session(api_a, tenant_a):
    UsageCounter.objects.create(tenant=tenant_a, period=timezone.now().strftime("%Y-%m"),
                                minutes=tenant_a.minute_cap)
    response = api_a.post(URL, {}, format="json")
    assert response.status_code == 402
    assert error_of(response)["code"] == "minute_cap_reached"
    assert not AgentSession.objects.exists() and not Call.objects.exists()


def test_another_tenants_assistant_is_unknown(api_a, tenant_b):
    theirs = Assistant.objects.create(tenant=tenant_b, name="Globex")
    response = api_a.post(URL, {"assistant": theirs.pk}, format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "unknown_assistant"


def test_the_assistants_language_and_voice_apply(api_a, tenant_a):
    mine = Assistant.objects.create(tenant=tenant_a, name="Empfang", language="de", voice="de+f3")
    body = api_a.post(URL, {"assistant": mine.pk}, format="json").json()
    session = AgentSession.objects.get(pk=body["sessionId"])
    assert (session.language, session.voice) == ("de", "de+f3")


def test_without_credentials_nothing_is_granted(tenant_a):
    response = make_client(tenant="acme").post(URL, {}, format="json")
    assert response.status_code == 401
    assert not AgentSession.objects.exists()


def test_a_token_expired_unused_gives_its_minutes_back_at_the_next_grant(tenant_a):
    long_ago = timezone.now() - timedelta(minutes=5)
    stale, _ = agent_session_create(tenant=tenant_a, now=long_ago)
    agent_session_create(tenant=tenant_a)
    stale.call.refresh_from_db()
    assert (stale.call.status, stale.call.seconds) == ("canceled", 0)
    assert _reserved(tenant_a) == Call.objects.get(ended_at__isnull=True).reserved_minutes
    assert UsageCounter.objects.get(tenant=tenant_a).calls == 1
