"""The passages' full-text index, kept by the database (knowledge_app/index.py reads
it): on PostgreSQL a stored generated tsvector column (the `german` configuration;
the heading weighs A, the text B, `index_extra` C) with a GIN index; on SQLite an
FTS5 table of the same texts' stems, kept in step with the passages by triggers that
call `knowledge_stems` (registered on every connection by knowledge_app/index.py).
Other databases are refused here, before a passage could be stored without an index.

A later migration that makes Django remake the passages' table on SQLite drops the
triggers with it; tests/knowledge_app/test_index.py notices."""
from django.db import migrations

FTS_TABLE = "knowledge_app_passage_fts"
PASSAGES = "knowledge_app_knowledgepassage"
PG_INDEX = "knowledge_passage_search"


def _fts_values(row):
    return (f"{row}.id, 't' || {row}.tenant_id, knowledge_stems({row}.heading), knowledge_stems({row}.text), "
            f"knowledge_stems({row}.index_extra)")


SQLITE = [
    f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(tenant, heading, body, extra, "
    "tokenize = 'unicode61 remove_diacritics 0')",
    f"CREATE TRIGGER knowledge_passage_fts_insert AFTER INSERT ON {PASSAGES} BEGIN "
    f"INSERT INTO {FTS_TABLE}(rowid, tenant, heading, body, extra) VALUES ({_fts_values('new')}); END",
    f"CREATE TRIGGER knowledge_passage_fts_delete AFTER DELETE ON {PASSAGES} BEGIN "
    f"DELETE FROM {FTS_TABLE} WHERE rowid = old.id; END",
    f"CREATE TRIGGER knowledge_passage_fts_update AFTER UPDATE OF tenant_id, heading, text, index_extra "
    f"ON {PASSAGES} BEGIN DELETE FROM {FTS_TABLE} WHERE rowid = old.id; "
    f"INSERT INTO {FTS_TABLE}(rowid, tenant, heading, body, extra) VALUES ({_fts_values('new')}); END",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS knowledge_passage_fts_update",
    "DROP TRIGGER IF EXISTS knowledge_passage_fts_delete",
    "DROP TRIGGER IF EXISTS knowledge_passage_fts_insert",
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
]
POSTGRESQL = [
    f"ALTER TABLE {PASSAGES} ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ("
    "setweight(to_tsvector('german'::regconfig, heading), 'A') || "
    "setweight(to_tsvector('german'::regconfig, text), 'B') || "
    "setweight(to_tsvector('german'::regconfig, index_extra), 'C')) STORED",
    f"CREATE INDEX {PG_INDEX} ON {PASSAGES} USING gin (search_vector)",
]
POSTGRESQL_DROP = [
    f"DROP INDEX IF EXISTS {PG_INDEX}",
    f"ALTER TABLE {PASSAGES} DROP COLUMN IF EXISTS search_vector",
]


def create(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    statements = {"sqlite": SQLITE, "postgresql": POSTGRESQL}.get(vendor)
    if statements is None:
        raise RuntimeError(f"knowledge_app's full-text index needs SQLite or PostgreSQL, not {vendor}.")
    for statement in statements:
        schema_editor.execute(statement)


def drop(apps, schema_editor):
    for statement in {"sqlite": SQLITE_DROP, "postgresql": POSTGRESQL_DROP}.get(schema_editor.connection.vendor, []):
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("knowledge_app", "0001_initial")]

    operations = [migrations.RunPython(create, drop)]
