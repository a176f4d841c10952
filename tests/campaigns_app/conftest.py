"""Fixtures of the campaign tests: a Bavarian tenant with a number and an assistant,
campaigns with contacts, a clock the tests set, and the carrier's side of a call
(the sim carrier's signed events through the real webhook code)."""
import json
from datetime import UTC, datetime, timedelta

import pytest

from calls_app import sim
from calls_app.models import Call
from calls_app.services import event_receive
from calls_app.signing import carrier_secret, signature_header
from campaigns_app import services
from campaigns_app.contact_rows import from_json
from campaigns_app.scheduler import campaigns_tick
from console.assistants.models import Assistant
from console.numbers.services import number_create

NUMBER = "+493055501234"
# A Tuesday in November 2026, 10:00 in Munich (09:00 UTC): the default window is open.
TUESDAY_10 = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


@pytest.fixture
def bavarian(tenant_a):
    """Tenant A in Bavaria, with minutes enough for every test (2 granted per call)."""
    tenant_a.state = "BY"
    tenant_a.minute_cap = 100_000
    tenant_a.max_call_minutes = 2
    tenant_a.save()
    return tenant_a


@pytest.fixture
def number(bavarian):
    return number_create(tenant=bavarian, e164=NUMBER)


@pytest.fixture
def assistant(bavarian):
    return Assistant.objects.create(tenant=bavarian, name="Erinnerung")


def contacts(count, *, start=1, **extra):
    """`count` contact objects with distinct mobile numbers."""
    return [{"phone": f"+4917{600000000 + start + index:09d}", "name": f"Kontakt {start + index}", **extra}
            for index in range(count)]


@pytest.fixture
def make_campaign(bavarian, number):
    def make(*, people=(), now=TUESDAY_10, start=True, **fields):
        fields.setdefault("name", "Erinnerung")
        fields.setdefault("purpose", "service")
        campaign = services.campaign_create(tenant=bavarian, **fields)
        if people:
            rows, errors = from_json(list(people), time_zone=bavarian.time_zone, now=now)
            assert not errors, errors
            services.contacts_add(campaign=campaign, rows=rows, now=now)
        if start:
            campaign = services.campaign_transition(campaign=campaign, change="start", now=now)
        return campaign
    return make


def tick(now):
    return campaigns_tick(now=now)


def open_calls(tenant):
    return list(Call.objects.for_tenant(tenant).filter(ended_at__isnull=True).order_by("created_at", "id"))


def end_call(call, status="completed", seconds=30, when=None):
    """The call's carrier reports its end through the signed webhook code (a completed
    call starts first; busy, no-answer and failed calls never started)."""
    call.refresh_from_db()
    when = when or datetime.now(UTC)
    if status == "completed":
        events = sim.call_events(carrier_call_id=call.carrier_call_id, started=when - timedelta(seconds=seconds),
                                 seconds=seconds, event_prefix=f"evt-{call.pk}", call_id=call.pk, conversation=[])
    else:
        events = [{"id": f"evt-{call.pk}-end", "type": "call.ended", "occurredAt": when.isoformat(),
                   "data": {"carrierCallId": call.carrier_call_id, "status": status, "seconds": 0}}]
    secret = carrier_secret(call.carrier)
    for event in events:
        body = json.dumps(event).encode()
        outcome = event_receive(carrier_id=call.carrier_id, raw_body=body, signature=signature_header(secret, body))
        assert outcome.status in (200, 202), event


def minutes(n):
    return timedelta(minutes=n)
