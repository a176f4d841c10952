"""Retention per tenant: with the clock moved past each period, exactly the expired data
is gone, the calls stay, usage never changes (privacy_app.services.retention_apply and
`manage.py apply_retention`)."""
import datetime as dt
import io

import pytest
from django.core.management import CommandError, call_command

from calls_app.models import Call, CarrierEvent, TranscriptEntry, UsageCounter
from console.audit.models import AuditEntry
from leads_app.models import Lead
from privacy_app.models import ErasedCaller, Export, RetentionSettings
from privacy_app.selectors import retention_settings_for
from privacy_app.services import pending_events_purge, retention_apply
from tests.privacy_app.conftest import START, make_lead, play_call

pytestmark = pytest.mark.django_db


@pytest.fixture
def recording_on(tenant_a, tenant_b):
    for tenant in (tenant_a, tenant_b):
        tenant.recording_enabled = True
        tenant.save(update_fields=["recording_enabled"])


@pytest.fixture
def history(clock, numbers, carrier_client, tenant_a, tenant_b, recording_on):
    """Calls and leads of day 0, day 65 and day 90; tenant B has a call and a lead of day 0."""
    made = {}
    for day in (0, 65, 90):
        clock.days_later(day)
        made[f"call{day}"] = play_call(carrier_client, text=f"Zeile von Tag {day}")
        made[f"lead{day}"] = make_lead(tenant_a)
    clock.days_later(0)
    made["call_b"] = play_call(carrier_client, to=numbers[1].e164, text="Zeile von B")
    made["lead_b"] = make_lead(tenant_b)
    return made


def usage():
    return list(UsageCounter.objects.order_by("tenant_id", "period").values_list(
        "tenant_id", "period", "minutes", "seconds", "calls", "reserved_minutes"))


def texts(call):
    return list(TranscriptEntry.objects.filter(call=call).values_list("text", flat=True))


def fresh(obj):
    obj.refresh_from_db()
    return obj


def test_a_tenant_that_never_chose_has_the_documented_defaults(tenant_a):
    retention = retention_settings_for(tenant=tenant_a)
    assert (retention.transcript_days, retention.recording_days, retention.lead_days) == (90, 30, 180)


def test_past_each_period_exactly_the_expired_data_is_gone(history, clock, tenant_a):
    usage_before = usage()
    clock.days_later(100)

    counts = retention_apply(tenant=tenant_a)

    # Day 0 (100 days old): transcript past 90 days, recording past 30.
    old = fresh(history["call0"])
    assert texts(old) == [] and old.recording_url == "" and old.redacted
    assert (old.seconds, old.direction, old.status, old.from_e164) == (125, "inbound", "completed", "+491761234567")
    assert not CarrierEvent.objects.filter(carrier_call_id=old.carrier_call_id).exists()
    # Day 65 (35 days old): only the recording link is past its period.
    mid = fresh(history["call65"])
    assert texts(mid) == ["Guten Tag, Praxis Acme.", "Zeile von Tag 65"] and mid.recording_url == "" and mid.redacted
    ended = CarrierEvent.objects.get(carrier_call_id=mid.carrier_call_id, type="call.ended")
    assert ended.data["recordingUrl"] == ""
    # Day 90 (10 days old): untouched.
    young = fresh(history["call90"])
    assert len(texts(young)) == 2 and young.recording_url and not young.redacted
    # No lead is 180 days old yet; tenant B was not asked.
    assert Lead.objects.count() == 4
    assert len(texts(history["call_b"])) == 2 and fresh(history["call_b"]).recording_url
    assert counts == {"transcriptLines": 2, "recordingLinks": 2, "callsRedacted": 2, "carrierEvents": 6,
                      "leads": 0, "exports": 0, "erasedCallers": 0, "webhookDeliveries": 0, "agentSessions": 0,
                      "analyses": 0}
    assert usage() == usage_before


def test_leads_go_when_their_period_is_past(history, clock, tenant_a):
    clock.days_later(200)
    assert retention_apply(tenant=tenant_a)["leads"] == 1  # day 0: 200 days; day 65: 135 days
    assert set(Lead.objects.for_tenant(tenant_a).values_list("pk", flat=True)) == {
        history["lead65"].pk, history["lead90"].pk}


def test_a_second_run_removes_nothing_more(history, clock, tenant_a):
    clock.days_later(100)
    retention_apply(tenant=tenant_a)
    assert set(retention_apply(tenant=tenant_a).values()) == {0}


def test_usage_is_unchanged_and_recompute_finds_no_drift(history, clock):
    before = usage()
    clock.days_later(400)
    out = io.StringIO()
    call_command("apply_retention", stdout=out)
    assert usage() == before
    assert Call.objects.count() == 4 and not TranscriptEntry.objects.exists() and not Lead.objects.exists()
    call_command("recompute_usage", "--dry-run", stdout=(check := io.StringIO()))  # exits 1 on drift
    assert "No drift" in check.getvalue()


def test_unlimited_keeps_everything(history, clock, tenant_a):
    RetentionSettings.objects.create(tenant=tenant_a, transcript_days=None, recording_days=None, lead_days=None)
    clock.days_later(3000)
    assert set(retention_apply(tenant=tenant_a).values()) == {0}
    assert TranscriptEntry.objects.filter(call__tenant=tenant_a).count() == 6
    assert Lead.objects.for_tenant(tenant_a).count() == 3


def test_each_tenant_has_its_own_periods(history, clock, tenant_a, tenant_b):
    RetentionSettings.objects.create(tenant=tenant_b, transcript_days=1, recording_days=1, lead_days=1)
    clock.days_later(2)
    call_command("apply_retention", stdout=io.StringIO())
    assert texts(history["call_b"]) == [] and not Lead.objects.for_tenant(tenant_b).exists()
    assert TranscriptEntry.objects.filter(call__tenant=tenant_a).count() == 6


def test_dry_run_counts_what_would_go_and_removes_nothing(history, clock, tenant_a):
    clock.days_later(100)
    would = retention_apply(tenant=tenant_a, dry_run=True)
    assert TranscriptEntry.objects.filter(call__tenant=tenant_a).count() == 6
    assert not Call.objects.filter(redacted=True).exists() and not AuditEntry.objects.exists()
    assert retention_apply(tenant=tenant_a) == would


def test_a_run_that_removes_something_is_in_the_audit_trail(history, clock, tenant_a):
    clock.days_later(100)
    counts = retention_apply(tenant=tenant_a)
    [entry] = AuditEntry.objects.all()
    assert (entry.actor, entry.action, entry.tenant, entry.details) == (
        "system:apply_retention", "privacy.retention", tenant_a, counts)


def test_expired_exports_and_old_erasure_markers_go(clock, tenant_a):
    Export.objects.create(tenant=tenant_a, phone="+491761234567", subject="anon-x", status="ready", requested_by="t",
                          created_at=START, expires_at=START + dt.timedelta(days=7))
    ErasedCaller.objects.create(tenant=tenant_a, pseudonym="anon-x", erased_at=START)
    clock.days_later(6)
    assert retention_apply(tenant=tenant_a)["exports"] == 0
    clock.days_later(7)
    assert retention_apply(tenant=tenant_a)["exports"] == 1
    clock.days_later(31)
    assert retention_apply(tenant=tenant_a)["erasedCallers"] == 1


def test_events_that_never_found_their_call_go_after_a_week(clock, carrier_client, numbers):
    line = {"carrierCallId": "CA-lost", "role": "user", "text": "Niemand hört zu", "ts": START.isoformat()}
    assert carrier_client.post("call.transcript", line).status_code == 202
    clock.days_later(6)
    assert pending_events_purge() == 0
    clock.days_later(8)
    assert pending_events_purge() == 1 and not CarrierEvent.objects.exists()


def test_the_command_reports_per_tenant_and_refuses_an_unknown_tenant(history, clock):
    clock.days_later(100)
    out = io.StringIO()
    call_command("apply_retention", "--dry-run", stdout=out)
    assert "acme: would remove 2 transcriptLines" in out.getvalue()
    assert "globex: would remove" in out.getvalue()
    with pytest.raises(CommandError, match="No tenant 'nope'"):
        call_command("apply_retention", "--tenant", "nope")
