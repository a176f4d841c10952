"""Calls whose owner died (issue 31, finding 6): the owner of a call under way (the voice
agent's WebSocket) writes a heartbeat; the periodic sweep ends the calls whose
heartbeat stopped, booked up to the last one, once, and leaves live calls alone."""
from datetime import timedelta

import pytest
from django.utils import timezone

from calls_app.models import Call, UsageCounter
from calls_app.services import (
    call_heartbeat,
    call_request_web,
    call_web_end,
    call_web_start,
    calls_orphaned_end,
)
from console.jobs.schedule import PERIODIC_JOBS
from webhooks_app.models import Delivery
from webhooks_app.services import endpoint_create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _room_for_calls(tenant_a):
    tenant_a.minute_cap, tenant_a.max_call_minutes = 100, 10
    tenant_a.save(update_fields=["minute_cap", "max_call_minutes"])


@pytest.fixture
def timeout(settings):
    settings.CALL_HEARTBEAT_TIMEOUT_SEC = 30
    return timedelta(seconds=30)


def started_call(tenant, *, at):
    call = call_request_web(tenant=tenant, now=at)
    call_web_start(call_id=call.pk, now=at)
    return Call.objects.get(pk=call.pk)


def counter_of(tenant):
    counter = UsageCounter.objects.get(tenant=tenant)
    return counter.calls, counter.seconds, counter.minutes, counter.reserved_minutes


def test_the_start_is_the_owners_first_heartbeat(tenant_a):
    at = timezone.now()
    call = started_call(tenant_a, at=at)
    assert call.heartbeat_at == call.started_at == at


def test_a_call_whose_heartbeat_stopped_is_ended_and_booked_up_to_its_last_heartbeat(tenant_a, timeout):
    endpoint_create(tenant=tenant_a, url="http://127.0.0.1:9/hook", event_types=["call.ended"])
    began = timezone.now() - timedelta(minutes=5)
    call = started_call(tenant_a, at=began)
    last_beat = began + timedelta(seconds=95)
    assert call_heartbeat(call_id=call.pk, now=last_beat) is True
    assert counter_of(tenant_a)[3] == 10  # the grant's minutes are reserved

    assert calls_orphaned_end(now=last_beat + timeout + timedelta(seconds=1)) == 1
    call.refresh_from_db()
    assert (call.status, call.seconds, call.ended_at) == (Call.Status.COMPLETED, 95, last_beat)
    assert counter_of(tenant_a) == (1, 95, 2, 0)  # booked, reservation released
    ended = Delivery.objects.get(event_type="call.ended")
    assert '"seconds":95' in ended.payload and call.pk in ended.payload


def test_the_sweep_books_once_however_often_it_runs_and_whoever_ends_the_call_later(tenant_a, timeout):
    began = timezone.now() - timedelta(minutes=5)
    call = started_call(tenant_a, at=began)
    later = began + timeout + timedelta(minutes=1)
    assert calls_orphaned_end(now=later) == 1
    booked = counter_of(tenant_a)
    assert booked == (1, 0, 0, 0)  # no heartbeat after the start: 0 s known
    assert calls_orphaned_end(now=later) == 0
    assert calls_orphaned_end(now=later + timedelta(hours=1)) == 0
    # The owner's own end (a server that was only stalled, not dead) changes nothing.
    call_web_end(call_id=call.pk, now=later + timedelta(minutes=2))
    assert counter_of(tenant_a) == booked
    call.refresh_from_db()
    assert call.ended_at == began
    # Nor can a late heartbeat bring the call back.
    assert call_heartbeat(call_id=call.pk, now=later) is False
    call.refresh_from_db()
    assert call.heartbeat_at == began and call.is_ended


def test_live_calls_and_calls_without_an_owner_are_left_alone(tenant_a, timeout, carrier):
    now = timezone.now()
    live = started_call(tenant_a, at=now - timedelta(minutes=3))
    call_heartbeat(call_id=live.pk, now=now - timeout + timedelta(seconds=1))
    queued = call_request_web(tenant=tenant_a, now=now - timedelta(minutes=3))  # its token never used
    # A phone call that its carrier holds: it ends with the carrier's call.ended.
    carrier_call = Call.objects.create(tenant=tenant_a, carrier=carrier, carrier_call_id="CA1", direction="inbound",
                                       to_e164="+493055501234", status=Call.Status.ACTIVE,
                                       started_at=now - timedelta(hours=1))
    before = counter_of(tenant_a)

    assert calls_orphaned_end(now=now) == 0
    for call in (live, queued, carrier_call):
        call.refresh_from_db()
        assert call.ended_at is None, call
    assert counter_of(tenant_a) == before


def test_an_owner_that_beats_between_the_sweeps_read_and_its_lock_keeps_its_call(tenant_a, timeout, monkeypatch):
    from calls_app import services

    began = timezone.now() - timedelta(minutes=5)
    call = started_call(tenant_a, at=began)
    original = services._orphan_end

    def owner_beats_first(**kwargs):
        call_heartbeat(call_id=call.pk, now=timezone.now())
        return original(**kwargs)

    monkeypatch.setattr(services, "_orphan_end", owner_beats_first)
    assert calls_orphaned_end() == 0
    call.refresh_from_db()
    assert call.ended_at is None and call.status == Call.Status.ACTIVE


def test_the_booked_seconds_never_pass_the_grant(tenant_a, timeout):
    began = timezone.now() - timedelta(hours=1)
    call = started_call(tenant_a, at=began)
    call_heartbeat(call_id=call.pk, now=began + timedelta(minutes=20))  # past a 10-minute grant
    assert calls_orphaned_end() == 1
    call.refresh_from_db()
    assert call.seconds == call.max_seconds == 600


def test_the_sweep_is_a_periodic_job():
    assert ("calls_app.services.calls_orphaned_end", 1) in [(func, minutes) for _, func, minutes in PERIODIC_JOBS]
