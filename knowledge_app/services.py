"""Writes of the knowledge base: documents in (read, split, indexed), documents out,
the synonym groups replaced."""
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Sum

from console.errors import ValidationFailed
from console.tenants.models import Tenant
from knowledge_app import analysis, readers, splitting
from knowledge_app.errors import KnowledgeLimitReached, UnreadableDocument
from knowledge_app.models import KnowledgeDocument, KnowledgePassage, KnowledgeSynonym, KnowledgeTerm

_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
MAX_TITLE = 200
MAX_MEMBERS = 20
MAX_MEMBER_CHARS = 60


def clean_title(title: str | None, field: str = "title") -> str:
    title = " ".join((title or "").split())
    if not title:
        raise ValidationFailed.field(field, "Send a title of 1 to 200 characters.")
    if len(title) > MAX_TITLE or _UNPRINTABLE.search(title):
        raise ValidationFailed.field(field, "Send a title of 1 to 200 printable characters.")
    return title


def _check_room(tenant: Tenant, size_bytes: int, *, lock: bool = False) -> None:
    """409 `knowledge_limit_reached` when the tenant's documents (count or bytes) leave
    no room for `size_bytes` more."""
    documents = KnowledgeDocument.objects.for_tenant(tenant)
    if lock:
        # Two uploads at once must not both fit into the last free megabyte.
        # NO KEY: rows that point at the tenant (calls, leads) are still inserted meanwhile.
        Tenant.objects.select_for_update(no_key=True).filter(pk=tenant.pk).first()
    totals = documents.aggregate(count=Count("id"), used=Sum("size_bytes"))
    count, used = totals["count"], totals["used"] or 0
    max_bytes, max_documents = settings.KNOWLEDGE_MAX_TENANT_BYTES, settings.KNOWLEDGE_MAX_DOCUMENTS
    if count >= max_documents:
        raise KnowledgeLimitReached(f"The tenant has {count} documents, the most allowed. Delete one first.",
                                    details={"documents": count, "maxDocuments": max_documents})
    if used + size_bytes > max_bytes:
        raise KnowledgeLimitReached(
            f"The tenant's documents take {used} bytes; with this one ({size_bytes}) they would exceed "
            f"{max_bytes}. Delete documents first.",
            details={"usedBytes": used, "bytes": size_bytes, "maxBytes": max_bytes})


@dataclass(frozen=True)
class ReadDocument:
    """A document read and split, not stored yet."""

    content_type: str
    size_bytes: int
    pieces: list


def knowledge_document_read(*, tenant: Tenant, content_type: str, data: bytes | None = None,
                            text: str | None = None) -> "ReadDocument":
    """Uploaded bytes (`data`: text, Markdown or PDF) or `text`, read and split into
    passages; refused when too large, unreadable or too complex, or when the tenant's
    knowledge has no room for it. Stores nothing (the admin reads while validating)."""
    size_bytes = len(data) if data is not None else len((text or "").encode("utf-8"))
    readers.check_size(size_bytes)
    _check_room(tenant, size_bytes)  # before the work of reading it
    sections = readers.sections_of(content_type, data=data, text=text)
    pieces = splitting.passages(sections, settings.KNOWLEDGE_PASSAGE_MAX_CHARS)
    if not pieces:
        raise UnreadableDocument("The document holds no text.", details={"reason": "no_text"})
    return ReadDocument(content_type, size_bytes, pieces)


def knowledge_document_store(*, tenant: Tenant, title: str, read: "ReadDocument") -> KnowledgeDocument:
    """The read document with its passages (indexed by the database)."""
    title = clean_title(title)
    with transaction.atomic():
        _check_room(tenant, read.size_bytes, lock=True)
        document = KnowledgeDocument.objects.create(
            tenant=tenant, title=title, content_type=read.content_type, size_bytes=read.size_bytes,
            characters=sum(len(piece.text) for piece in read.pieces), passage_count=len(read.pieces))
        KnowledgePassage.objects.bulk_create([
            KnowledgePassage(tenant=tenant, document=document, ordinal=ordinal, heading=piece.heading,
                             text=piece.text, index_extra=title)
            for ordinal, piece in enumerate(read.pieces)
        ], batch_size=500)
        texts = [f"{title}\n{piece.heading}\n{piece.text}" for piece in read.pieces]
        _vocabulary_insert(tenant=tenant, document=document, rows=analysis.vocabulary(texts))
    return document


def _vocabulary_insert(*, tenant: Tenant, document: KnowledgeDocument, rows: Iterable[tuple[Any, ...]]) -> None:
    """The document's vocabulary rows, in one statement run for many rows: thousands of
    them (a long word is listed under each of its tails), where building each row's
    SQL through the ORM took most of an upload's time."""
    table = KnowledgeTerm._meta.db_table
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} (tenant_id, document_id, stem, word, whole, passages) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            [(tenant.pk, document.pk, *row) for row in sorted(rows)])


def knowledge_document_create(*, tenant: Tenant, title: str, content_type: str, data: bytes | None = None,
                              text: str | None = None) -> KnowledgeDocument:
    """A document from uploaded bytes or text: read, split into passages, stored and
    indexed; refused (before anything is stored) when it is too large, unreadable, too
    complex, or the tenant's knowledge is full."""
    title = clean_title(title)
    read = knowledge_document_read(tenant=tenant, content_type=content_type, data=data, text=text)
    return knowledge_document_store(tenant=tenant, title=title, read=read)


def knowledge_document_delete(*, document: KnowledgeDocument) -> None:
    """The document and its passages (the index follows them: knowledge_app/index.py)."""
    with transaction.atomic():
        document.delete()


def clean_synonym_groups(groups: object, field: str = "synonyms") -> list[list[str]]:
    """Groups of 2–20 members (words or short phrases, no `=`), as lists of strings."""
    problem = None
    cleaned = []
    if not isinstance(groups, list) or len(groups) > settings.KNOWLEDGE_MAX_SYNONYM_GROUPS:
        problem = f"Send a list of at most {settings.KNOWLEDGE_MAX_SYNONYM_GROUPS} groups."
    else:
        for index, group in enumerate(groups):
            if not isinstance(group, list) or not 2 <= len(group) <= MAX_MEMBERS:
                problem = f"Group {index + 1}: send a list of 2 to {MAX_MEMBERS} words or phrases."
                break
            members = [" ".join(member.split()) if isinstance(member, str) else None for member in group]
            if any(not member or len(member) > MAX_MEMBER_CHARS or "=" in member or _UNPRINTABLE.search(member)
                   or not analysis.words(member) for member in members):
                problem = (f"Group {index + 1}: each member is a word or phrase of 1 to {MAX_MEMBER_CHARS} "
                           "characters, without '='.")
                break
            first: dict[str, str] = {}
            for member in members:
                assert member is not None  # every member was checked to be a word above
                first.setdefault(member.casefold(), member)
            distinct = list(first.values())
            if len(distinct) < 2:
                problem = f"Group {index + 1}: send at least two different words or phrases."
                break
            cleaned.append(distinct)
    if problem:
        raise ValidationFailed.field(field, problem)
    return cleaned


def synonym_room_left(*, tenant: Tenant) -> bool:
    return KnowledgeSynonym.objects.for_tenant(tenant).count() < settings.KNOWLEDGE_MAX_SYNONYM_GROUPS


def knowledge_synonym_group_save(*, synonym: KnowledgeSynonym, members: list[str]) -> KnowledgeSynonym:
    """One synonym group (the admin edits them one by one): `synonym` (new, with its
    tenant, or stored) gets `members`."""
    members = clean_synonym_groups([members], field="terms")[0]
    with transaction.atomic():
        if synonym.pk is None and not synonym_room_left(tenant=synonym.tenant):
            raise ValidationFailed.field(
                "terms", f"At most {settings.KNOWLEDGE_MAX_SYNONYM_GROUPS} synonym groups per tenant.")
        synonym.terms = " = ".join(members)
        synonym.save()
    return synonym


def knowledge_synonyms_replace(*, tenant: Tenant, groups: list[list[str]]) -> list[list[str]]:
    """The tenant's synonym groups are `groups` (lists of members) from now on."""
    groups = clean_synonym_groups(groups)
    with transaction.atomic():
        KnowledgeSynonym.objects.for_tenant(tenant).delete()
        KnowledgeSynonym.objects.bulk_create(
            [KnowledgeSynonym(tenant=tenant, terms=" = ".join(group)) for group in groups])
    return groups
