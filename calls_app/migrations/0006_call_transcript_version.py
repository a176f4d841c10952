"""`Call.transcript_version`, kept by the database: triggers on the transcript lines'
table change it whenever a line of the call is written, changed or deleted, by any
writer (the ORM, the webhook's hand-written SQL, a bulk insert, a cascade).

The call list's text cache (calls_app/call_texts.py) keys each call's text by its row,
this column included, so it tells from the calls query alone whether a transcript
changed; reading every call's line ids with the page was half of a 200-call page's
database time on PostgreSQL. Existing calls start at their number of lines (any value
other than 0 means "read its lines").

SQLite has row triggers only. PostgreSQL gets statement triggers with transition
tables, so a retention purge that deletes thousands of lines updates each call once.
SQLite drops a table's triggers when Django remakes it (some ALTERs of
TranscriptEntry would): tests/calls_app/test_transcript_version.py fails then.
"""
from django.db import migrations, models
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce

# Per event: which rows name the calls whose transcript changed (SQLite's row triggers;
# PostgreSQL's transition tables).
EVENTS = {
    "added": ("INSERT", "NEW.call_id", "REFERENCING NEW TABLE AS lines_after",
              "SELECT call_id FROM lines_after"),
    # Lines are never changed (TranscriptEntry refuses to), but a change by other means
    # still counts, for the call it left and the one it went to.
    "changed": ("UPDATE", "OLD.call_id, NEW.call_id", "REFERENCING OLD TABLE AS lines_before NEW TABLE AS lines_after",
                "SELECT call_id FROM lines_before UNION SELECT call_id FROM lines_after"),
    "removed": ("DELETE", "OLD.call_id", "REFERENCING OLD TABLE AS lines_before",
                "SELECT call_id FROM lines_before"),
}


def _tables(apps):
    return (apps.get_model("calls_app", "Call")._meta.db_table,
            apps.get_model("calls_app", "TranscriptEntry")._meta.db_table)


def _sqlite_triggers(calls, lines):
    for name, (event, call_ids, _transition, _select) in EVENTS.items():
        yield (f"CREATE TRIGGER calls_transcript_line_{name} AFTER {event} ON {lines} FOR EACH ROW BEGIN "
               f"UPDATE {calls} SET transcript_version = transcript_version + 1 WHERE id IN ({call_ids}); END")


def _postgresql_triggers(calls, lines):
    for name, (event, _call_ids, transition, select) in EVENTS.items():
        yield (f"CREATE FUNCTION calls_transcript_line_{name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
               f"UPDATE {calls} SET transcript_version = transcript_version + 1 WHERE id IN ({select}); "
               f"RETURN NULL; END $$")
        yield (f"CREATE TRIGGER calls_transcript_line_{name} AFTER {event} ON {lines} {transition} "
               f"FOR EACH STATEMENT EXECUTE FUNCTION calls_transcript_line_{name}()")


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor not in ("sqlite", "postgresql"):
        raise NotImplementedError(f"calls_app 0006: no transcript triggers for {vendor}")
    Call = apps.get_model("calls_app", "Call")
    TranscriptEntry = apps.get_model("calls_app", "TranscriptEntry")
    lines = (TranscriptEntry.objects.filter(call_id=OuterRef("pk")).order_by().values("call_id")
             .annotate(n=Count("id")).values("n"))
    Call.objects.update(transcript_version=Coalesce(Subquery(lines), 0))
    build = _sqlite_triggers if vendor == "sqlite" else _postgresql_triggers
    for statement in build(*_tables(apps)):
        schema_editor.execute(statement)


def drop_triggers(apps, schema_editor):
    postgresql = schema_editor.connection.vendor == "postgresql"
    _calls, lines = _tables(apps)
    for name in EVENTS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS calls_transcript_line_{name}" + (f" ON {lines}" if postgresql else ""))
        if postgresql:
            schema_editor.execute(f"DROP FUNCTION IF EXISTS calls_transcript_line_{name}()")


class Migration(migrations.Migration):
    dependencies = [("calls_app", "0005_german_labels")]

    operations = [
        migrations.AddField(
            model_name="call",
            name="transcript_version",
            field=models.PositiveIntegerField(db_default=0, default=0, editable=False),
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
