"""The full-text index of the passages, per database vendor, and the tenant's
vocabulary (knowledge_app/analysis.py) that widens a query.

PostgreSQL: a stored generated column `search_vector` (the heading with weight A,
the text B, the title C, each `to_tsvector('german', …)`) with a GIN index over
tenant and vector; a query is `to_tsquery('german', …)` of its words joined by `|`,
ranked by `ts_rank` in groups of words of similar weight (`weight_groups`).

SQLite: an FTS5 table `knowledge_app_passage_fts` (tenant, heading, body, extra)
whose rows hold the stems of the same texts, kept in step with the passages by
triggers that call the SQL function `knowledge_stems`, which
`register_sqlite_functions` adds to every connection; queries MATCH the tenant's
token AND any of the words' stems, ranked by `bm25`. (bm25's term statistics span
the table, every tenant's passages; only the order of a tenant's own results can
depend on them, never which passages are found.)
"""
from dataclasses import dataclass

from django.db import connection

from knowledge_app import analysis

FTS_TABLE = "knowledge_app_passage_fts"
PASSAGES = "knowledge_app_knowledgepassage"
DOCUMENTS = "knowledge_app_knowledgedocument"
TERMS = "knowledge_app_knowledgeterm"
# Words the vocabulary adds per stem of a query (`zahn…` → zahnarzt, zahnreinigung, …),
# and rows it reads at most.
WORDS_PER_STEM = 5
MAX_VOCABULARY_ROWS = 2000
# PostgreSQL ranks the query's words in this many groups of similar weight, and looks
# for candidates by the words in at most this share of the tenant's passages first.
RANK_GROUPS = 3
COMMON_SHARE = 0.05
PRUNE_FROM_PASSAGES = 500
# bm25 weights of the FTS5 columns (tenant, heading, body, extra), and ts_rank's of
# the vector's labels D (unused), C (title), B (text), A (heading): the heading counts
# twice the text on both databases.
BM25_WEIGHTS = (0.0, 2.0, 1.0, 0.3)
TS_RANK_WEIGHTS = "{0.1, 0.15, 0.5, 1.0}"


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


def search(*, tenant_id, query, document_ids=None, limit):
    """The tenant's best passages for any of the words of `query` (analysis.Query),
    best first."""
    if not query or limit <= 0 or document_ids == []:
        return []
    if connection.vendor == "postgresql":
        return _search_postgresql(tenant_id, query, document_ids, limit)
    return _search_sqlite(tenant_id, query.words, document_ids, limit)


def _documents_clause(document_ids, params, *, postgresql):
    if document_ids is None:
        return ""
    if postgresql:
        params.append(list(document_ids))
        return " AND p.document_id = ANY(%s)"
    params.extend(document_ids)
    return f" AND p.document_id IN ({', '.join(['%s'] * len(document_ids))})"


def tsquery(words):
    """The `to_tsquery('german', …)` text: any of the words (letters and digits only,
    analysis.WORD, so quoting them is enough)."""
    return " | ".join(f"'{word}'" for word in words)


def weight_groups(query, groups=RANK_GROUPS):
    """The query's words in at most `groups` groups of similar weight, each with its
    mean weight, heaviest first: PostgreSQL's ts_rank weighs no query word above
    another, so each group is ranked on its own and the ranks are added, weighted."""
    ordered = sorted(zip(query.weights, query.words, strict=True), reverse=True)
    size = -(-len(ordered) // groups)
    chunks = [ordered[start:start + size] for start in range(0, len(ordered), size)]
    return [([word for _, word in chunk], sum(weight for weight, _ in chunk) / len(chunk)) for chunk in chunks]


def _search_postgresql(tenant_id, query, document_ids, limit):
    """Candidates are the passages with one of the query's rarer words (ts_rank then
    weighs all of them): a word in most passages changes the order little but made
    every passage a candidate to rank. If that finds fewer than `limit`, all words.
    Tenants with fewer than PRUNE_FROM_PASSAGES passages are searched by all words at once."""
    rare = query.rare_words(COMMON_SHARE) if query.passages >= PRUNE_FROM_PASSAGES else query.words
    hits = _ranked_postgresql(tenant_id, query, rare, document_ids, limit)
    if len(hits) < limit and len(rare) < len(query.words):
        hits = _ranked_postgresql(tenant_id, query, query.words, document_ids, limit)
    return hits


def _ranked_postgresql(tenant_id, query, candidates, document_ids, limit):
    groups = weight_groups(query)
    names = [f"q{index}" for index in range(len(groups))]
    rank = " + ".join(f"%s * ts_rank('{TS_RANK_WEIGHTS}', p.search_vector, {name})" for name in names)
    queries = ", ".join(f"to_tsquery('german', %s) {name}" for name in names)
    params = [weight for _, weight in groups] + [tsquery(words) for words, _ in groups]
    params += [tsquery(candidates), tenant_id]
    documents = _documents_clause(document_ids, params, postgresql=True)
    params.append(limit)
    sql = (f"SELECT p.id, p.document_id, d.title, p.heading, p.text, {rank} AS score "
           f"FROM {PASSAGES} p JOIN {DOCUMENTS} d ON d.id = p.document_id, {queries}, "
           f"to_tsquery('german', %s) candidates "
           f"WHERE p.tenant_id = %s AND p.search_vector @@ candidates{documents} "
           f"ORDER BY score DESC, p.id LIMIT %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [Hit(*row) for row in cursor.fetchall()]


def fts_query(tenant_id, words):
    """The FTS5 MATCH expression: the tenant's token AND any of the words' stems."""
    stems = list(dict.fromkeys(filter(None, (analysis.stem(word) for word in words))))
    if not stems:
        return None
    either = " OR ".join(f'"{stem}"' for stem in stems)
    return f'tenant : "t{int(tenant_id)}" AND {{heading body extra}} : ({either})'


def _search_sqlite(tenant_id, words, document_ids, limit):
    match = fts_query(tenant_id, words)
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


# --- The tenant's vocabulary ---------------------------------------------------------

def vocabulary(*, tenant_id, lookup):
    """What the tenant's vocabulary (KnowledgeTerm) says to an analysis.Lookup:
    `{"prefixes": {stem: [words that begin with it]}, "tails": {stem: [long words that
    end in it]}, "parts": {stem: [words that are it]}}`, at most WORDS_PER_STEM words
    each, the shortest first; `"df"`: {stem: the tenant's passages with it} of every
    word found (of its forms, the most), and `"passages"`: how many the tenant has. One
    query, each part of it on the (tenant, stem) index."""
    if not (lookup.prefixes or lookup.tails or lookup.parts):
        return {}
    # One indexed range or list per part of the union, so that each part reads only
    # its rows of the (tenant, whole, stem) index (an OR of them made SQLite read them
    # all; without `whole` in the index, PostgreSQL misjudged a prefix's rows and
    # started parallel workers, 10 ms, for a lookup of 0.2 ms).
    postgresql = connection.vendor == "postgresql"
    selects, params = [], []
    select = f"SELECT stem, word, whole, passages FROM {TERMS} WHERE tenant_id = %s AND whole = %s AND "
    for prefix in sorted(lookup.prefixes):
        if postgresql:  # the index's text_pattern_ops answers LIKE 'x%' (migration 0002)
            selects.append(select + "stem LIKE %s")
            params.extend([tenant_id, True, f"{prefix}%"])
        else:  # SQLite compares bytes (BINARY): a prefix is a range
            selects.append(select + "stem >= %s AND stem < %s")
            params.extend([tenant_id, True, prefix, prefix + "\U0010ffff"])
    for whole, stems in ((False, lookup.tails), (True, lookup.parts)):
        if stems:
            selects.append(select + f"stem IN ({', '.join(['%s'] * len(stems))})")
            params.extend([tenant_id, whole, *sorted(stems)])
    # With each word, the number of the tenant's passages that have it, and the number
    # of its passages: the weights of the ranking.
    sql = (f"SELECT stem, word, whole, sum(passages), "
           f"(SELECT coalesce(sum(passage_count), 0) FROM {DOCUMENTS} WHERE tenant_id = %s) "
           f"FROM ({' UNION ALL '.join(selects)}) AS terms GROUP BY stem, word, whole LIMIT %s")
    params = [tenant_id, *params, MAX_VOCABULARY_ROWS]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    found = {"prefixes": {}, "tails": {}, "parts": {}, "df": {}, "passages": int(rows[0][4]) if rows else 0}
    for stem, word, whole, passages, _ in rows:
        own_stem = stem if whole else analysis.stem(word)[:analysis.MAX_WORD]  # a compound found by its tail
        found["df"][own_stem] = max(found["df"].get(own_stem, 0), int(passages))
    for stem, word, whole, _, _ in sorted(rows, key=lambda row: (len(row[1]), row[1])):
        if whole and stem in lookup.parts:
            found["parts"].setdefault(stem, []).append(word)
        if not whole and stem in lookup.tails:
            found["tails"].setdefault(stem, []).append(word)
        if whole:
            for prefix in lookup.prefixes:
                if stem.startswith(prefix):
                    found["prefixes"].setdefault(prefix, []).append(word)
    for kind in ("prefixes", "tails", "parts"):
        found[kind] = {key: words[:WORDS_PER_STEM] for key, words in found[kind].items()}
    return found
