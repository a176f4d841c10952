"""Fixtures of the privacy tests: a movable clock, calls played through the real signed
webhook, and searches of every table of the database for a piece of text or for a
phone number in any written form."""
import base64
import contextlib
import datetime as dt
import re
import uuid

import phonenumbers
import pytest
from django.apps import apps
from django.db import connection
from django.utils import timezone

from agent_app.services import agent_session_claim, agent_session_create
from calls_app.models import Call
from calls_app.services import call_web_end, call_web_line
from campaigns_app.contact_rows import from_json
from campaigns_app.services import campaign_create, campaign_transition, contacts_add
from console.jobs.services import job_enqueue
from console.numbers.services import number_create
from leads_app.services import lead_create

# The calls tests' carrier and webhook client, used here as they are.
from tests.calls_app.conftest import NUMBER_A, carrier, carrier_client  # noqa: F401
from tests.receiver import Receiver
from webhooks_app.models import Delivery

CALLER = "+491761234567"
CALLER_NATIONAL = "0176 1234567"
CALLER_DIGITS = "1761234567"  # in the E.164 form and in every national form
GIVEN = "0176 123 45 67"  # how a caller gave the number to the voice agent's page
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


@pytest.fixture
def receivers():
    """A webhook receiver that takes every event and one that keeps failing (500)."""
    made = [Receiver([200]), Receiver([500])]
    yield made
    for one in made:
        one.stop()


def web_call(tenant, *, variables=None, lines=()):
    """A whole web call of the voice agent: granted, opened, spoken, ended."""
    session, token = agent_session_create(tenant=tenant, variables=variables or {})
    assert agent_session_claim(token=token) is not None
    for text in lines:
        call_web_line(call_id=session.call_id, role="user", text=text, ts=START)
    call_web_end(call_id=session.call_id)
    return Call.objects.get(pk=session.call_id)


def attempt_all_due():
    """Each pending delivery attempted once through the job queue (inline in tests), so
    the jobs' own table sees them as the worker would."""
    for pk in Delivery.objects.filter(state=Delivery.State.PENDING).values_list("pk", flat=True):
        job_enqueue("webhooks_app.services.delivery_attempt", kwargs={"delivery_id": pk})


# A documented marketing consent (§ 7a UWG) as a contact list brings it; its source names
# the number, as such records do.
CONSENT = {"consentSource": "Webformular acme.example/angebote, Rückrufnummer 0176 1234567",
           "consentAt": "2025-02-01T10:00:00+01:00", "consentText": "Ja, rufen Sie mich zu Angeboten an."}


def campaign_of(tenant, people, *, purpose="marketing", name="Frühjahrsaktion", now=START, **fields):
    """A running campaign of the tenant, calling from NUMBER_A, with `people` (rows as
    the API takes them) as its contacts; returns it and the upload's report."""
    campaign = campaign_create(tenant=tenant, name=name, purpose=purpose, from_number=NUMBER_A, **fields)
    rows, errors = from_json(list(people), time_zone=tenant.time_zone, now=now)
    assert not errors, errors
    report = contacts_add(campaign=campaign, rows=rows, now=now)
    return campaign_transition(campaign=campaign, change="start", now=now), report


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


# What people put between the digits of a number; the scan drops it before it looks.
_SEPARATORS = re.compile(r"[\s./()\-\u00a0]")
_BASE64 = re.compile(r"^[A-Za-z0-9+/=_-]{16,}$")


def _texts_of(value):
    """The value as text, and if it is base64 (django-q keeps pickles so), the decoded
    bytes as text too: a pickled string keeps its characters."""
    if isinstance(value, memoryview):
        value = value.tobytes()
    if isinstance(value, bytes):
        return [value.decode("latin-1")]
    text = "" if value is None else str(value)
    texts = [text]
    if _BASE64.match(text):
        padded = text + "=" * (-len(text) % 4)
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            with contextlib.suppress(ValueError):
                texts.append(decode(padded).decode("latin-1"))
    return texts


def copies_of_number(e164):
    """{(table, column, primary key)} of every cell of every table of the database that
    holds the number in any written form: E.164, `0176 1234567`, `(0176) 123-45 67`,
    bare digits… (separators are dropped and the national significant number is looked
    for), also inside base64 (pickled job results). Every model's table, the ones
    Django makes for relations included, must be among the tables searched."""
    national = phonenumbers.national_significant_number(phonenumbers.parse(e164))
    hits = set()
    with connection.cursor() as cursor:
        tables = connection.introspection.table_names(cursor)
        models_tables = {model._meta.db_table for model in apps.get_models(include_auto_created=True)}
        assert models_tables <= set(tables), models_tables - set(tables)
        quote = connection.ops.quote_name
        for table in tables:
            columns = [c.name for c in connection.introspection.get_table_description(cursor, table)]
            key = connection.introspection.get_primary_key_column(cursor, table) or columns[0]
            cursor.execute(f"SELECT {', '.join(quote(c) for c in columns)} FROM {quote(table)}")
            for row in cursor.fetchall():
                for column, value in zip(columns, row, strict=True):
                    if any(national in _SEPARATORS.sub("", text) for text in _texts_of(value)):
                        hits.add((table, column, str(row[columns.index(key)])))
    return hits
