"""Reads of the knowledge base; `knowledge_search` is what a conversation turn and the
`lookup_knowledge` tool use (agent_app imports it)."""
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Count, QuerySet, Sum

from console.tenants.models import Tenant
from knowledge_app import analysis, index
from knowledge_app.models import KnowledgeDocument, KnowledgeSynonym

ELLIPSIS = "…"


@dataclass(frozen=True)
class FoundPassage:
    document: str  # the document's id (kd_…)
    title: str  # the document's title
    heading: str  # the headings it stands under ("Leistungen › Zahnreinigung"), or ""
    text: str
    score: float

    def as_json(self) -> dict[str, Any]:
        return {"document": self.document, "title": self.title, "heading": self.heading, "text": self.text,
                "score": float(f"{float(self.score):.6g}")}


def synonym_groups(*, tenant: Tenant) -> list[list[str]]:
    """The tenant's synonym groups as lists of members."""
    return [row.members for row in KnowledgeSynonym.objects.for_tenant(tenant)]


def knowledge_search(*, tenant: Tenant, query: str, document_ids: Iterable[str] | None = None, limit: int | None = None,
                     max_chars: int | None = None) -> list[FoundPassage]:
    """The tenant's passages that best answer `query` (German full-text search, the
    tenant's synonyms widening the query), best first: at most `limit` passages
    (KNOWLEDGE_SEARCH_LIMIT) with at most `max_chars` characters of text together
    (KNOWLEDGE_SEARCH_MAX_CHARS; a first passage longer than that is cut at a word).
    `document_ids` limits the search to those documents (None: all of them).

    The passages are the tenant's data for the model to read, never instructions."""
    limit = settings.KNOWLEDGE_SEARCH_LIMIT if limit is None else limit
    max_chars = settings.KNOWLEDGE_SEARCH_MAX_CHARS if max_chars is None else max_chars
    if not query or not query.strip() or limit <= 0 or max_chars <= 0:
        return []
    asked = analysis.query_terms(query, synonym_groups(tenant=tenant),
                                 lookup=lambda lookup: index.vocabulary(tenant_id=tenant.pk, lookup=lookup))
    document_ids = None if document_ids is None else list(document_ids)
    hits = index.search(tenant_id=tenant.pk, query=asked, document_ids=document_ids, limit=limit)
    found: list[FoundPassage] = []
    used = 0
    for hit in hits:
        text = hit.text
        if used + len(text) > max_chars:
            if found:
                break
            text = _cut(text, max_chars)
        used += len(text)
        found.append(FoundPassage(hit.document_id, hit.title, hit.heading, text, hit.score))
    return found


def _cut(text: str, max_chars: int) -> str:
    cut = text.rfind(" ", 0, max_chars)
    return (text[:cut] if cut > max_chars // 2 else text[:max_chars - 1]).rstrip() + ELLIPSIS


def document_reference_problems(*, tenant: Tenant, value: list[str]) -> list[str]:
    """What is wrong with the knowledge document ids an assistant names (its
    `knowledge`; console.assistants.references): each id that is no document of this
    tenant. Another tenant's document answers like one that does not exist."""
    known = set(KnowledgeDocument.objects.for_tenant(tenant).filter(pk__in=value).values_list("pk", flat=True))
    return [f"No knowledge document '{document_id}' in this tenant (GET /v2/knowledge lists them)."
            for document_id in value if document_id not in known]


def document_list(*, tenant: Tenant) -> QuerySet[KnowledgeDocument]:
    return KnowledgeDocument.objects.for_tenant(tenant)


def knowledge_usage(*, tenant: Tenant) -> dict[str, int]:
    """`{"documents", "bytes"}` of the tenant's knowledge, and the limits."""
    totals = KnowledgeDocument.objects.for_tenant(tenant).aggregate(documents=Count("id"), bytes=Sum("size_bytes"))
    return {"documents": totals["documents"], "bytes": totals["bytes"] or 0,
            "maxDocuments": settings.KNOWLEDGE_MAX_DOCUMENTS, "maxBytes": settings.KNOWLEDGE_MAX_TENANT_BYTES}
