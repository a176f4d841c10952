"""Hand-written SQL of the webhook's hot path (call.transcript events).

The ORM builds and compiles each statement anew on every call, and that Python was
most of an event's cost, far more than the SQL itself (docs/performance-history.md). The
few statements of the hot path are written out here once per
database vendor; the values go through the model fields' own `get_db_prep_save`, so
they are stored exactly as the ORM stores them, and the conflict clause comes from
Django's backend operations, so the SQL runs on SQLite and PostgreSQL alike.

Everything else (call.started, call.ended, pending events, the admin, the API) uses
the ORM; tests/calls_app/test_webhook_hot_path.py checks that both store the same rows.
"""
import hashlib
from functools import lru_cache

from django.db import connection, models
from django.db.models.constants import OnConflict
from django.utils import timezone

from calls_app.models import Call, Carrier, CarrierEvent, TranscriptEntry

_EVENT_FIELDS = ("carrier", "event_id", "type", "carrier_call_id", "occurred_at", "data", "state", "received_at")
_ENTRY_FIELDS = ("call", "role", "text", "ts")


def _table(model):
    return connection.ops.quote_name(model._meta.db_table)


def _column(model, name):
    return connection.ops.quote_name(model._meta.get_field(name).column)


def _insert(model, field_names, *, ignore_conflicts=False):
    ops = connection.ops
    on_conflict = OnConflict.IGNORE if ignore_conflicts else None
    fields = [model._meta.get_field(name) for name in field_names]
    sql = "{insert} {table} ({columns}) VALUES ({values}) {suffix}".format(
        insert=ops.insert_statement(on_conflict=on_conflict), table=_table(model),
        columns=", ".join(ops.quote_name(f.column) for f in fields), values=", ".join(["%s"] * len(fields)),
        suffix=ops.on_conflict_suffix_sql(fields, on_conflict, None, None) if on_conflict else "",
    )
    return sql.rstrip(), [_adapter(field) for field in fields]


def _adapter(field):
    """How a value of `field` is turned into its column's value, as the ORM does it
    (`get_db_prep_save`) minus the checks our already validated values do not need:
    strings of text columns pass as they are; aware datetimes and JSON go through the
    backend's adapters directly."""
    target = field.target_field if field.is_relation else field
    if isinstance(target, models.JSONField):
        return lambda value: connection.ops.adapt_json_value(value, target.encoder)
    if isinstance(target, (models.CharField, models.TextField)):
        return None
    if isinstance(target, models.DateTimeField):
        return lambda value: connection.ops.adapt_datetimefield_value(value)
    return lambda value: field.get_db_prep_save(value, connection)


def _params(adapters, values):
    return [value if adapt is None else adapt(value) for adapt, value in zip(adapters, values, strict=True)]


@lru_cache(maxsize=None)
def _statements(vendor):
    """The statements of one database vendor (built once per process and vendor)."""
    return {
        "nonce": "SELECT {nonce} FROM {table} WHERE {pk} = %s".format(
            nonce=_column(Carrier, "secret_nonce"), table=_table(Carrier), pk=_column(Carrier, "id")),
        # Only a call that started (or ended) takes transcript lines; both are set once
        # and never cleared, so a row found here stays applicable.
        "started_call": (
            "SELECT {pk}, {transcription}, {redacted} FROM {table} WHERE {carrier} = %s AND {carrier_call_id} = %s"
            " AND ({started} IS NOT NULL OR {ended} IS NOT NULL)"
        ).format(pk=_column(Call, "id"), transcription=_column(Call, "transcription_enabled"),
                 redacted=_column(Call, "redacted"), table=_table(Call),
                 carrier=_column(Call, "carrier"), carrier_call_id=_column(Call, "carrier_call_id"),
                 started=_column(Call, "started_at"), ended=_column(Call, "ended_at")),
        "event_state": "SELECT {state} FROM {table} WHERE {carrier} = %s AND {event_id} = %s".format(
            state=_column(CarrierEvent, "state"), table=_table(CarrierEvent),
            carrier=_column(CarrierEvent, "carrier"), event_id=_column(CarrierEvent, "event_id")),
        # A known event id inserts nothing (rowcount 0): carriers retry.
        "insert_event": _insert(CarrierEvent, _EVENT_FIELDS, ignore_conflicts=True),
        "insert_entry": _insert_entry_unless_redacted(),
    }


def _insert_entry_unless_redacted():
    """INSERT … SELECT: the line is stored only if its call is not redacted at that
    moment (the call was read before the transaction; an erasure may have come since).
    On PostgreSQL the SELECT locks the call row: an erasure locks the call before it
    deletes lines, so the two wait for each other and the one that comes second sees
    the other's work. The lock is the one the line's trigger takes to change the call's
    transcript_version (migration 0006), not a share lock that two writers of the same
    call would each hold while waiting for the other's. SQLite's IMMEDIATE transactions
    run one at a time."""
    ops = connection.ops
    fields = [TranscriptEntry._meta.get_field(name) for name in _ENTRY_FIELDS]
    sql = "INSERT INTO {table} ({columns}) SELECT {values} FROM {call} WHERE {pk} = %s AND {redacted} = %s{lock}".format(
        table=_table(TranscriptEntry), columns=", ".join(ops.quote_name(f.column) for f in fields),
        values=", ".join(["%s"] * len(fields)), call=_table(Call), pk=_column(Call, "id"),
        redacted=_column(Call, "redacted"), lock=" FOR NO KEY UPDATE" if connection.features.has_select_for_no_key_update else "",
    )
    return sql, [_adapter(field) for field in fields] + [None, None]


def _fetch_one(cursor, name, params):
    cursor.execute(_statements(connection.vendor)[name], params)
    return cursor.fetchone()


def carrier_nonce(carrier_id):
    """The carrier's secret nonce, or None for an unknown carrier (one primary-key read)."""
    with connection.cursor() as cursor:
        row = _fetch_one(cursor, "nonce", [carrier_id])
    return row[0] if row else None


def started_call(carrier_id, carrier_call_id):
    """(call id, whether it keeps transcript lines) of the call if it started or ended,
    else None. A call keeps them with transcription on and while it is not redacted."""
    with connection.cursor() as cursor:
        row = _fetch_one(cursor, "started_call", [carrier_id, carrier_call_id])
    return (row[0], bool(row[1]) and not bool(row[2])) if row else None


def event_insert(*, carrier_id, event, state):
    """The statement and parameters that store the event unless its id is known."""
    sql, fields = _statements(connection.vendor)["insert_event"]
    return sql, _params(fields, (carrier_id, event.id, event.type, event.carrier_call_id, event.occurred_at,
                                 event.data, state, timezone.now()))


def event_state(cursor, *, carrier_id, event_id):
    return _fetch_one(cursor, "event_state", [carrier_id, event_id])[0]


def transcript_entry_insert(*, call_id, role, text, ts):
    """The statement and parameters that store one transcript line unless its call is
    redacted by then (rowcount 0)."""
    sql, fields = _statements(connection.vendor)["insert_entry"]
    return sql, _params(fields, (call_id, role, text, ts, call_id, False))


def lock_call_events(carrier_id, carrier_call_id):
    """Within a transaction: waits until no other transaction handles an event of the
    same call, and holds that lock until commit.

    Without it, on PostgreSQL an event that finds no started call (and is kept
    pending) could commit just after the call.started that applies the pending events
    looked for them: it would stay pending for ever. A transaction-scoped advisory
    lock on the call's key orders the two. SQLite needs none: its IMMEDIATE
    transactions hold the database's write lock from their start."""
    if connection.vendor != "postgresql":
        return
    digest = hashlib.blake2b(f"{carrier_id}\x1f{carrier_call_id}".encode(), digest_size=8).digest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int.from_bytes(digest, "big", signed=True)])
