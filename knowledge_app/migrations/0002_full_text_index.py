"""The passages' full-text index, kept by the database (knowledge_app/index.py reads
it): on PostgreSQL a stored generated tsvector column (the `german` configuration;
the heading weighs A, the text B, `index_extra` C) with a GIN index; on SQLite an
FTS5 table of the same texts' stems, kept in step with the passages by triggers that
call `knowledge_stems` (registered on every connection by knowledge_app/index.py).
Also the lookup index of the tenant's vocabulary (KnowledgeTerm) by stem and prefix.
Other databases are refused here, before a passage could be stored without an index.

A later migration that makes Django remake the passages' table on SQLite drops the
triggers with it; tests/knowledge_app/test_index.py notices."""
from django.db import DatabaseError, migrations, transaction

FTS_TABLE = "knowledge_app_passage_fts"
PASSAGES = "knowledge_app_knowledgepassage"
PG_INDEX = "knowledge_passage_search"
TERMS = "knowledge_app_knowledgeterm"
TERMS_INDEX = "knowledge_term_lookup"


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
    # The vocabulary by tenant, kind and stem: SQLite compares bytes, so a prefix is a range.
    f"CREATE INDEX {TERMS_INDEX} ON {TERMS} (tenant_id, whole, stem)",
]
SQLITE_DROP = [
    f"DROP INDEX IF EXISTS {TERMS_INDEX}",
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
    # The vocabulary by tenant, kind and stem; text_pattern_ops answers
    # `stem LIKE 'zahn%'` whatever the database's collation.
    f"CREATE INDEX {TERMS_INDEX} ON {TERMS} (tenant_id, whole, stem text_pattern_ops)",
]
POSTGRESQL_DROP = [
    f"DROP INDEX IF EXISTS {TERMS_INDEX}",
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
    if vendor == "postgresql":
        _create_gin_index(schema_editor)


def _create_gin_index(schema_editor):
    """GIN over tenant and vector (btree_gin), so that one index scan finds the
    tenant's matching passages whatever the other tenants hold; where the extension
    cannot be created (it is a trusted extension since PostgreSQL 13: the database's
    owner may), GIN over the vector alone, and the tenant is checked per match."""
    try:
        with transaction.atomic(using=schema_editor.connection.alias):
            schema_editor.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
        columns = "tenant_id, search_vector"
    except DatabaseError:
        columns = "search_vector"
    schema_editor.execute(f"CREATE INDEX {PG_INDEX} ON {PASSAGES} USING gin ({columns})")


def drop(apps, schema_editor):
    for statement in {"sqlite": SQLITE_DROP, "postgresql": POSTGRESQL_DROP}.get(schema_editor.connection.vendor, []):
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("knowledge_app", "0001_initial")]

    operations = [migrations.RunPython(create, drop)]
