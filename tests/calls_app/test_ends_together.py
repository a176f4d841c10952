"""Many calls of one tenant ending at the same moment while the job worker leases the
tenant's webhook deliveries (issue 31, finding 2).

On PostgreSQL an end used to lock the tenant's row with the call (`select_for_update()`
with `select_related("tenant")`), while inserting the call's deliveries needs a share
lock on the endpoint's row, which the worker's lease held together with a lock it
wanted on the tenant: `deadlock detected`, and the call stayed active with 0 s. Now
an end locks only the rows it changes, in one order (docs/architecture.md, "Row
locks"), and a deadlocked end is retried. SQLite runs one writer at a time and cannot
deadlock this way; the tests run there too (the same bookings must come out).
"""
import json
import logging
import threading
from datetime import timedelta

import pytest
from django.db import OperationalError, connection, connections
from django.utils import timezone

from calls_app import services
from calls_app.models import Call, UsageCounter
from calls_app.periods import billable_minutes
from calls_app.services import call_request_web, call_web_end, call_web_start, carrier_create
from calls_app.signing import signature_header
from console.numbers.services import number_create
from console.tenants.services import tenant_create
from webhooks_app import services as webhooks
from webhooks_app.models import Delivery
from webhooks_app.services import endpoint_create, event_publish
from webhooks_app.transport import Result

SESSIONS = 12
ROUNDS = 3
WORKERS = 2
NUMBER = "+493055501234"
DEADLINE = 120  # every wait of these tests ends


@pytest.fixture
def busy_tenant(transactional_db, monkeypatch):
    """A tenant with three endpoints for every call event, whose deliveries "succeed"
    at once (the transport is not under test; the worker's lease is)."""
    monkeypatch.setattr(webhooks.transport, "post", lambda *args, **kwargs: Result(200))
    tenant = tenant_create(slug="busy", name="Busy", minute_cap=100_000, max_call_minutes=5)
    for index in range(3):
        endpoint_create(tenant=tenant, url=f"http://127.0.0.1:9/hook/{index}",
                        event_types=["call.started", "call.ended", "usage.threshold"])
    return tenant


def _seed_pending_deliveries(tenant, round_number):
    """Deliveries already waiting when the calls end, so the worker is leasing right then."""
    for index in range(SESSIONS):
        event_publish(tenant=tenant, event_type="call.started", key=f"seed:{round_number}:{index}", data={"n": index})


def _worker(stop, failures):
    """The job worker: leases and sends every due delivery until told to stop."""
    try:
        while not stop.is_set():
            due = list(Delivery.objects.filter(state=Delivery.State.PENDING).values_list("pk", flat=True)[:50])
            for pk in due:
                webhooks.delivery_attempt(delivery_id=pk)
    except Exception as exc:  # noqa: BLE001 (reported by the test)
        failures.append(repr(exc))
    finally:
        connections.close_all()


def _together(end_one, items, tenant):
    """Runs end_one(item) for every item at once, beside the job worker; the errors."""
    failures, stop = [], threading.Event()
    barrier = threading.Barrier(len(items))

    def run(item):
        try:
            barrier.wait(timeout=DEADLINE)
            end_one(item)
        except Exception as exc:  # noqa: BLE001 (reported by the test)
            failures.append(repr(exc))
        finally:
            connections.close_all()

    workers = [threading.Thread(target=_worker, args=(stop, failures)) for _ in range(WORKERS)]
    enders = [threading.Thread(target=run, args=(item,)) for item in items]
    for thread in workers + enders:
        thread.start()
    for thread in enders:
        thread.join(timeout=DEADLINE)
    stop.set()
    for thread in workers:
        thread.join(timeout=DEADLINE)
    assert not any(thread.is_alive() for thread in workers + enders), "a thread did not finish"
    return failures


def _assert_all_booked(tenant, calls, caplog):
    calls = list(Call.objects.filter(pk__in=[c.pk for c in calls]))
    assert all(call.status == Call.Status.COMPLETED and call.seconds > 0 for call in calls), \
        [(call.pk, call.status, call.seconds) for call in calls]
    counter = UsageCounter.objects.get(tenant=tenant)
    ended = Call.objects.filter(tenant=tenant, ended_at__isnull=False)
    assert counter.calls == ended.count()
    assert counter.seconds == sum(call.seconds for call in ended)
    assert counter.minutes == sum(billable_minutes(call.seconds) for call in ended)
    assert counter.reserved_minutes == sum(c.reserved_minutes for c in Call.objects.filter(ended_at__isnull=True))
    # Every end announced once to each endpoint.
    assert Delivery.objects.filter(event_type="call.ended").count() == 3 * ended.count()
    # No end met a deadlock, not even one that a retry saved.
    assert not [r for r in caplog.records if "deadlock" in r.getMessage().lower()], caplog.text


@pytest.mark.slow
def test_web_sessions_ending_together_are_all_booked_without_deadlock(busy_tenant, caplog):
    caplog.set_level(logging.WARNING)
    for round_number in range(ROUNDS):
        began = timezone.now() - timedelta(seconds=42)
        calls = [call_request_web(tenant=busy_tenant) for _ in range(SESSIONS)]
        for call in calls:
            call_web_start(call_id=call.pk, now=began)
        _seed_pending_deliveries(busy_tenant, round_number)
        failures = _together(lambda call: call_web_end(call_id=call.pk), calls, busy_tenant)
        assert failures == [], f"round {round_number}: {failures}"
        _assert_all_booked(busy_tenant, calls, caplog)


@pytest.mark.slow
def test_carrier_call_ends_arriving_together_are_all_booked_without_deadlock(busy_tenant, caplog):
    caplog.set_level(logging.WARNING)
    number_create(tenant=busy_tenant, e164=NUMBER)
    _, secret = carrier_create(carrier_id="burst")

    def receive(event):
        body = json.dumps(event).encode()
        state = services.event_receive(carrier_id="burst", raw_body=body,
                                       signature=signature_header(secret, body)).state
        assert state == "applied", state

    for round_number in range(ROUNDS):
        ids = [f"CA-{round_number}-{index}" for index in range(SESSIONS)]
        for carrier_call_id in ids:
            receive({"id": f"start-{carrier_call_id}", "type": "call.started", "occurredAt": "2026-01-01T10:00:00Z",
                     "data": {"carrierCallId": carrier_call_id, "direction": "inbound", "from": "+491711234567",
                              "to": NUMBER}})
        _seed_pending_deliveries(busy_tenant, round_number)
        ends = [{"id": f"end-{carrier_call_id}", "type": "call.ended", "occurredAt": "2026-01-01T10:01:05Z",
                 "data": {"carrierCallId": carrier_call_id, "status": "completed", "seconds": 65}}
                for carrier_call_id in ids]
        failures = _together(receive, ends, busy_tenant)
        assert failures == [], f"round {round_number}: {failures}"
        _assert_all_booked(busy_tenant, Call.objects.filter(carrier_call_id__in=ids), caplog)


def _deadlock():
    """The error psycopg raises for `deadlock detected`, as Django wraps it."""
    import psycopg

    try:
        raise psycopg.errors.DeadlockDetected("deadlock detected")
    except psycopg.errors.DeadlockDetected as cause:
        error = OperationalError("deadlock detected")
        error.__cause__ = cause
        return error


def test_a_deadlocked_web_end_is_retried_and_booked_once(transactional_db, monkeypatch, caplog):
    tenant = tenant_create(slug="busy", name="Busy", minute_cap=100, max_call_minutes=5)
    call = call_request_web(tenant=tenant)
    call_web_start(call_id=call.pk, now=timezone.now() - timedelta(seconds=30))
    original, raised = services._finish, []

    def finish_then_deadlock(*args, **kwargs):
        original(*args, **kwargs)  # its writes are rolled back with the transaction
        if not raised:
            raised.append(1)
            raise _deadlock()

    monkeypatch.setattr(services, "_finish", finish_then_deadlock)
    caplog.set_level(logging.WARNING)
    assert not connection.in_atomic_block
    ended = call_web_end(call_id=call.pk)
    assert raised and ended.status == Call.Status.COMPLETED
    call.refresh_from_db()
    assert call.status == Call.Status.COMPLETED and 30 <= call.seconds <= 40
    counter = UsageCounter.objects.get(tenant=tenant)
    assert (counter.calls, counter.seconds, counter.reserved_minutes) == (1, call.seconds, 0)
    assert "retry" in caplog.text.lower()


def test_an_end_that_keeps_deadlocking_gives_up_after_the_bounded_retries(transactional_db, monkeypatch):
    tenant = tenant_create(slug="busy", name="Busy", minute_cap=100, max_call_minutes=5)
    call = call_request_web(tenant=tenant)
    call_web_start(call_id=call.pk)
    attempts = []

    def always_deadlock(*args, **kwargs):
        attempts.append(1)
        raise _deadlock()

    monkeypatch.setattr(services, "_finish", always_deadlock)
    with pytest.raises(OperationalError):
        call_web_end(call_id=call.pk)
    assert len(attempts) == services.END_ATTEMPTS
    call.refresh_from_db()
    assert call.ended_at is None  # nothing half-written


def test_an_error_that_is_no_conflict_is_not_retried(transactional_db, monkeypatch):
    tenant = tenant_create(slug="busy", name="Busy", minute_cap=100, max_call_minutes=5)
    call = call_request_web(tenant=tenant)
    call_web_start(call_id=call.pk)
    attempts = []

    def broken(*args, **kwargs):
        attempts.append(1)
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(services, "_finish", broken)
    with pytest.raises(OperationalError):
        call_web_end(call_id=call.pk)
    assert len(attempts) == 1
