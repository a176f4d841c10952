"""Events of one call handled at the same moment by two workers: an event kept
pending must never miss the call.started that applies pending events (on PostgreSQL
that needed a lock; SQLite's write lock orders them anyway)."""
import json
import threading

from django.db import connection

from calls_app import carrier_events, services
from calls_app.models import CarrierEvent, TranscriptEntry
from calls_app.services import carrier_create
from calls_app.signing import signature_header
from console.numbers.services import number_create
from console.tenants.services import tenant_create

NUMBER = "+493055501234"


def receive(secret, event):
    body = json.dumps(event).encode()
    try:
        return services.event_receive(carrier_id="racecarrier", raw_body=body,
                                      signature=signature_header(secret, body)).state
    finally:
        connection.close()


def test_a_pending_event_committing_during_call_started_is_still_applied(transactional_db, monkeypatch):
    tenant = tenant_create(slug="racer", name="Racer")
    number_create(tenant=tenant, e164=NUMBER)
    _, secret = carrier_create(carrier_id="racecarrier")
    line = {"id": "evt-line", "type": "call.transcript", "occurredAt": "2026-01-01T10:00:00Z",
            "data": {"carrierCallId": "CA1", "role": "user", "text": "Hallo", "ts": "2026-01-01T10:00:01Z"}}
    started = {"id": "evt-start", "type": "call.started", "occurredAt": "2026-01-01T10:00:00Z",
               "data": {"carrierCallId": "CA1", "direction": "inbound", "from": "+491711234567", "to": NUMBER}}

    # The transcript line decides "pending" and then waits, uncommitted, while
    # call.started runs in another worker.
    decided, go_on = threading.Event(), threading.Event()
    original_apply = carrier_events._apply

    def apply_then_wait(carrier, event):
        outcome = original_apply(carrier, event)
        if event.type == "call.transcript":
            decided.set()
            go_on.wait(timeout=30)
        return outcome

    monkeypatch.setattr(carrier_events, "_apply", apply_then_wait)
    states = {}
    first = threading.Thread(target=lambda: states.update(line=receive(secret, line)))
    second = threading.Thread(target=lambda: states.update(started=receive(secret, started)))
    first.start()
    assert decided.wait(timeout=30)
    second.start()
    # call.started either waits for the line's transaction (the fix) or, without the
    # lock, finishes first and misses it; give it the chance to, then let the line commit.
    second.join(timeout=1)
    go_on.set()
    first.join(timeout=30)
    second.join(timeout=30)
    assert states == {"line": "pending", "started": "applied"}
    assert not CarrierEvent.objects.filter(state="pending").exists()
    assert TranscriptEntry.objects.get().text == "Hallo"
