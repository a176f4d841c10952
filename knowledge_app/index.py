"""The full-text index of the passages, per database vendor.

PostgreSQL: a stored generated column `search_vector` (the heading with weight A,
the text B, `index_extra` C, each `to_tsvector('german', …)`) with a GIN index;
queries are `to_tsquery('german', …)` of the query's alternatives joined by `|`,
ranked by `ts_rank`.

SQLite: an FTS5 table `knowledge_app_passage_fts` (tenant, heading, body, extra)
whose rows hold the stems of the same texts (knowledge_app/analysis.py), kept in step
with the passages by triggers that call the SQL function `knowledge_stems`, which
`register_sqlite_functions` adds to every connection; queries MATCH the tenant's
token AND any of the alternatives, ranked by `bm25` with the same weights' spirit.
(bm25's term statistics span the table, every tenant's passages; only the order of
a tenant's own results can depend on them, never which passages are found.)
"""
from dataclasses import dataclass

from django.db import connection

from knowledge_app import analysis

FTS_TABLE = "knowledge_app_passage_fts"
PASSAGES = "knowledge_app_knowledgepassage"
DOCUMENTS = "knowledge_app_knowledgedocument"
# bm25 weights of the FTS5 columns (tenant, heading, body, extra).
BM25_WEIGHTS = (0.0, 2.0, 1.0, 0.3)


def register_sqlite_functions(sender, connection, **kwargs):
    if connection.vendor == "sqlite":
        connection.connection.create_function("knowledge_stems", 1, _stems, deterministic=True)


def _stems(text):
    return analysis.stems(text) if text else ""


# --- Queries ------------------------------------------------------------------------

@dataclass(frozen=True)
class Hit:
    passage_id: int
    document_id: str
    title: str
    heading: str
    text: str
    score: float


def search(*, tenant_id, terms, document_ids=None, limit):
    """The tenant's best passages for any of `terms` (analysis.Term), best first."""
    if not terms or limit <= 0 or document_ids == []:
        return []
    if connection.vendor == "postgresql":
        return _search_postgresql(tenant_id, terms, document_ids, limit)
    return _search_sqlite(tenant_id, terms, document_ids, limit)


def _documents_clause(document_ids, params, *, postgresql):
    if document_ids is None:
        return ""
    if postgresql:
        params.append(list(document_ids))
        return " AND p.document_id = ANY(%s)"
    params.extend(document_ids)
    return f" AND p.document_id IN ({', '.join(['%s'] * len(document_ids))})"


def _search_postgresql(tenant_id, terms, document_ids, limit):
    query = " | ".join(f"'{term.word}'{':*' if term.prefix else ''}" for term in terms)
    params = [query, tenant_id]
    documents = _documents_clause(document_ids, params, postgresql=True)
    params.append(limit)
    sql = (f"SELECT p.id, p.document_id, d.title, p.heading, p.text, ts_rank(p.search_vector, q) AS score "
           f"FROM {PASSAGES} p JOIN {DOCUMENTS} d ON d.id = p.document_id, to_tsquery('german', %s) q "
           f"WHERE p.tenant_id = %s AND p.search_vector @@ q{documents} "
           f"ORDER BY score DESC, p.id LIMIT %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [Hit(*row) for row in cursor.fetchall()]


def fts_query(tenant_id, terms):
    """The FTS5 MATCH expression: the tenant's token AND any of the terms' stems."""
    alternatives = {}
    for term in terms:
        stem = term.stem
        if stem:
            alternatives[stem] = alternatives.get(stem, False) or term.prefix
    if not alternatives:
        return None
    either = " OR ".join(f'"{stem}"{" *" if prefix else ""}' for stem, prefix in alternatives.items())
    return f'tenant : "t{int(tenant_id)}" AND {{heading body extra}} : ({either})'


def _search_sqlite(tenant_id, terms, document_ids, limit):
    match = fts_query(tenant_id, terms)
    if match is None:
        return []
    weights = ", ".join(str(weight) for weight in BM25_WEIGHTS)
    params = [match]
    documents = _documents_clause(document_ids, params, postgresql=False)
    params.append(limit)
    sql = (f"SELECT p.id, p.document_id, d.title, p.heading, p.text, -bm25({FTS_TABLE}, {weights}) AS score "
           f"FROM {FTS_TABLE} f JOIN {PASSAGES} p ON p.id = f.rowid JOIN {DOCUMENTS} d ON d.id = p.document_id "
           f"WHERE {FTS_TABLE} MATCH %s{documents} ORDER BY score DESC, p.id LIMIT %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [Hit(*row) for row in cursor.fetchall()]
