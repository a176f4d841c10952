"""On PostgreSQL, a GIN index over the German text-search vector of transcript lines,
so the console's transcript search (calls_app/search.py) does not read every line.
Other databases search by substring and get no index."""
from django.db import migrations

INDEX = "calls_transcript_german_fts"


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        table = apps.get_model("calls_app", "TranscriptEntry")._meta.db_table
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON {table} USING gin (to_tsvector('german'::regconfig, COALESCE(text, '')))")


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("calls_app", "0003_call_redacted")]

    operations = [migrations.RunPython(create_index, drop_index)]
