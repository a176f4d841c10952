"""Fixtures of the privacy tests: a movable clock, calls played through the real signed
webhook, and a search of every table of the database for a piece of text."""
import datetime as dt
import uuid

import pytest
from django.db import connection
from django.utils import timezone

from calls_app.models import Call
from console.numbers.services import number_create
from leads_app.services import lead_create

# The calls tests' carrier and webhook client, used here as they are.
from tests.calls_app.conftest import NUMBER_A, carrier, carrier_client  # noqa: F401

CALLER = "+491761234567"
CALLER_NATIONAL = "0176 1234567"
CALLER_DIGITS = "1761234567"  # in the E.164 form and in every national form
NUMBER_B = "+493055509876"
START = dt.datetime(2025, 3, 3, 9, 0, tzinfo=dt.timezone.utc)


class Clock:
    """`django.utils.timezone.now` as the test sets it: moved, never slept."""

    def __init__(self, moment):
        self.moment = moment

    def __call__(self):
        return self.moment

    def set(self, moment):
        self.moment = moment

    def days_later(self, days):
        self.moment = START + dt.timedelta(days=days)
        return self.moment


@pytest.fixture
def clock(monkeypatch):
    clock = Clock(START)
    monkeypatch.setattr(timezone, "now", clock)
    return clock


@pytest.fixture
def numbers(tenant_a, tenant_b):
    return number_create(tenant=tenant_a, e164=NUMBER_A), number_create(tenant=tenant_b, e164=NUMBER_B)


def play_call(webhook, *, to=NUMBER_A, caller=CALLER, text="Meine Kundennummer ist vertraulich",
              seconds=125, recording="https://carrier.example/rec/1.mp3", occurred_at=None):
    """A whole inbound call through the webhook; returns the stored call."""
    ccid = f"CA{uuid.uuid4().hex}"
    when = (occurred_at or timezone.now()).isoformat()
    for event_type, data in (
        ("call.started", {"carrierCallId": ccid, "direction": "inbound", "from": caller, "to": to}),
        ("call.disclosed", {"carrierCallId": ccid}),
        ("call.transcript", {"carrierCallId": ccid, "role": "assistant", "text": "Guten Tag, Praxis Acme.", "ts": when}),
        ("call.transcript", {"carrierCallId": ccid, "role": "user", "text": text, "ts": when}),
        ("call.ended", {"carrierCallId": ccid, "status": "completed", "seconds": seconds, "recordingUrl": recording}),
    ):
        response = webhook.post(event_type, data, occurred_at=when)
        assert response.status_code == 200, response.content
    return Call.objects.get(carrier_call_id=ccid)


def make_lead(tenant, phone=CALLER, **fields):
    return lead_create(tenant=tenant, kind="callback", phone=phone, page_url="https://acme.example/kontakt", **fields)


def rows_containing(needle):
    """{(table, primary key)} of every row of every table with `needle` in any column,
    searched in the database itself (not through the API or the ORM's models)."""
    hits = set()
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            columns = [c.name for c in connection.introspection.get_table_description(cursor, table)]
            key = connection.introspection.get_primary_key_column(cursor, table) or columns[0]
            quote = connection.ops.quote_name
            condition = " OR ".join(f"CAST({quote(c)} AS TEXT) LIKE %s" for c in columns)
            cursor.execute(f"SELECT {quote(key)} FROM {quote(table)} WHERE {condition}",
                           [f"%{needle}%"] * len(columns))
            hits |= {(table, str(row[0])) for row in cursor.fetchall()}
    return hits
