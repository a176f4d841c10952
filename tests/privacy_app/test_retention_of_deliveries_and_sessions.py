"""Retention purges webhook deliveries with their attempts (`deliveryDays`, and a lead's
event never outlives the lead's period) and the voice agent's sessions with the
transcript period; the calls stay (issue 31, finding 3)."""
import pytest

from agent_app.models import AgentSession
from calls_app.models import Call, TranscriptEntry
from privacy_app.selectors import retention_settings_for
from privacy_app.services import retention_apply, retention_settings_update
from tests.privacy_app.conftest import attempt_all_due, make_lead, web_call
from webhooks_app.models import EVENT_TYPES, Attempt, Delivery
from webhooks_app.services import endpoint_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def day0(clock, tenant_a, tenant_b, receivers):
    """Day 0 at tenant A: a lead and a web call with its session, each announced to a
    receiver that takes it and to one that fails (an attempt each). The same at B."""
    made = {}
    for tenant in (tenant_a, tenant_b):
        for receiver in receivers:
            endpoint_create(tenant=tenant, url=receiver.url, event_types=list(EVENT_TYPES))
        made[tenant.slug] = {"lead": make_lead(tenant),
                             "call": web_call(tenant, variables={"name": "Anna"}, lines=["Hallo"])}
    attempt_all_due()
    assert Delivery.objects.filter(tenant=tenant_a).count() == 4 and Attempt.objects.filter(tenant=tenant_a).count() == 4
    return made


def kinds(tenant):
    return sorted(Delivery.objects.filter(tenant=tenant).values_list("event_type", flat=True))


def test_the_default_keeps_deliveries_30_days(tenant_a):
    assert retention_settings_for(tenant=tenant_a).delivery_days == 30


def test_deliveries_and_their_attempts_go_after_the_delivery_period(day0, clock, tenant_a, tenant_b):
    clock.days_later(29)
    assert retention_apply(tenant=tenant_a)["webhookDeliveries"] == 0
    clock.days_later(31)

    counts = retention_apply(tenant=tenant_a)

    assert counts["webhookDeliveries"] == 4 and counts["agentSessions"] == 0
    assert kinds(tenant_a) == [] and not Attempt.objects.filter(tenant=tenant_a).exists()
    assert len(kinds(tenant_b)) == 4  # B was not asked


def test_a_leads_delivery_goes_with_the_lead_when_that_period_is_shorter(day0, clock, tenant_a):
    retention_settings_update(tenant=tenant_a, lead_days=10, delivery_days=30)
    clock.days_later(11)

    counts = retention_apply(tenant=tenant_a)

    assert counts["leads"] == 1 and counts["webhookDeliveries"] == 2
    assert kinds(tenant_a) == ["call.ended", "call.ended"]


def test_without_limits_deliveries_stay(day0, clock, tenant_a):
    retention_settings_update(tenant=tenant_a, lead_days=None, delivery_days=None)
    clock.days_later(400)
    assert retention_apply(tenant=tenant_a)["webhookDeliveries"] == 0
    assert len(kinds(tenant_a)) == 4


def test_agent_sessions_go_with_the_transcript_period_and_their_calls_stay(day0, clock, tenant_a, tenant_b):
    call = day0["acme"]["call"]
    clock.days_later(89)
    assert retention_apply(tenant=tenant_a)["agentSessions"] == 0
    clock.days_later(91)

    counts = retention_apply(tenant=tenant_a)

    assert counts["agentSessions"] == 1 and counts["transcriptLines"] == 1
    assert not AgentSession.objects.filter(call=call).exists()
    assert Call.objects.get(pk=call.pk).seconds == call.seconds
    assert not TranscriptEntry.objects.filter(call=call).exists()
    assert AgentSession.objects.filter(call=day0["globex"]["call"]).exists()


def test_a_dry_run_counts_deliveries_and_sessions_and_removes_nothing(day0, clock, tenant_a):
    clock.days_later(91)
    counts = retention_apply(tenant=tenant_a, dry_run=True)
    assert (counts["webhookDeliveries"], counts["agentSessions"]) == (4, 1)
    assert len(kinds(tenant_a)) == 4 and AgentSession.objects.filter(tenant=tenant_a).count() == 1


def test_delivery_days_are_set_through_the_api(api_a, tenant_a):
    response = api_a.patch("/v2/privacy/settings", {"deliveryDays": 7}, format="json")
    assert response.status_code == 200 and response.json()["deliveryDays"] == 7
    assert retention_settings_for(tenant=tenant_a).delivery_days == 7
    assert api_a.patch("/v2/privacy/settings", {"deliveryDays": 0}, format="json").status_code == 400
