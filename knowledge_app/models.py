"""A tenant's knowledge: documents, their passages, and synonym groups that widen a
query (docs/api.md, "Knowledge").

The full-text index is kept by the database (migration 0002): on PostgreSQL a
stored generated `tsvector` column of the passages (the `german` configuration) with
a GIN index; on SQLite an FTS5 table that triggers keep in step with the passages,
through the SQL function `knowledge_stems` (knowledge_app/index.py registers it on
every connection). So no writer, cascade or bulk insert can forget the index.
"""
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet


class KnowledgeDocument(models.Model):
    class ContentType(models.TextChoices):
        TEXT = "text/plain", pgettext_lazy("choice", "Plain text")
        MARKDOWN = "text/markdown", pgettext_lazy("choice", "Markdown")
        PDF = "application/pdf", pgettext_lazy("choice", "PDF")

    class Status(models.TextChoices):
        # Uploads are read, split and indexed before the answer: a stored document is ready.
        READY = "ready", pgettext_lazy("choice", "Ready")

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("kd"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="knowledge_documents",
                               verbose_name=_("tenant"))
    title = models.CharField(_("title"), max_length=200)
    content_type = models.CharField(_("file type"), max_length=40, choices=ContentType.choices)
    # The bytes uploaded (what counts against KNOWLEDGE_MAX_TENANT_BYTES).
    size_bytes = models.PositiveIntegerField(_("size (bytes)"))
    characters = models.PositiveIntegerField(_("characters"), default=0)
    passage_count = models.PositiveIntegerField(_("passages"), default=0)
    status = models.CharField(_("status"), max_length=20, choices=Status.choices, default=Status.READY)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("knowledge document")
        verbose_name_plural = _("knowledge documents")

    def __str__(self):
        return self.title


class KnowledgePassage(models.Model):
    """A piece of a document (at most KNOWLEDGE_PASSAGE_MAX_CHARS characters) with the
    headings it stands under; what retrieval finds and the assistant reads."""

    # Not indexed on its own: the full-text index holds the tenant (PostgreSQL: GIN
    # over tenant and vector; SQLite: a token of the FTS5 row). An index of the tenant
    # alone lured PostgreSQL's planner into testing every passage of a tenant.
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+", db_index=False,
                               verbose_name=_("tenant"))
    document = models.ForeignKey(KnowledgeDocument, on_delete=models.CASCADE, related_name="passages",
                                 verbose_name=_("document"))
    ordinal = models.PositiveIntegerField(_("position in the document"))
    heading = models.CharField(_("heading"), max_length=300, blank=True, default="")
    text = models.TextField(_("text"))
    # More words for the index, with less weight: the document's title. Never shown.
    index_extra = models.TextField(_("search words beside the text"), blank=True, default="", editable=False)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["document", "ordinal"]
        verbose_name = _("passage")
        verbose_name_plural = _("passages")
        constraints = [models.UniqueConstraint(fields=["document", "ordinal"], name="knowledge_passage_ordinal")]

    def __str__(self):
        return self.heading or self.text[:60]


class KnowledgeTerm(models.Model):
    """The tenant's vocabulary, per document: each distinct word under its stem
    (`whole`), each long word also under its tails' stems (`zahnreinigung` under
    `reinig`). A query is widened with it (knowledge_app/analysis.py). Goes with its
    document. Its lookup index (tenant, whole, stem; for prefixes) is made by migration 0002."""

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+", db_index=False,
                               verbose_name=_("tenant"))
    document = models.ForeignKey(KnowledgeDocument, on_delete=models.CASCADE, related_name="+",
                                 verbose_name=_("knowledge document"))
    stem = models.CharField(_("word stem"), max_length=40)
    word = models.CharField(_("word of the document"), max_length=40)
    whole = models.BooleanField(_("whole word"))
    passages = models.PositiveIntegerField(_("passages with the word"))  # of the document's passages with the word

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        verbose_name = _("vocabulary entry")
        verbose_name_plural = _("vocabulary entries")


class KnowledgeSynonym(models.Model):
    """A group of words that mean the same to the tenant's callers, e.g.
    "Sprechzeiten = Öffnungszeiten = geöffnet": a query with one of them also asks for
    the others."""

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="knowledge_synonyms",
                               verbose_name=_("tenant"))
    # The members, separated by " = " (the form the admin shows and edits).
    terms = models.CharField(_("terms"), max_length=1000,
                             help_text=_("Words or short phrases that mean the same, separated by '=', e.g. "
                                         "Sprechzeiten = Öffnungszeiten = geöffnet."))
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        verbose_name = _("synonym group")
        verbose_name_plural = _("synonym groups")

    def __str__(self):
        return self.terms

    @property
    def members(self):
        return [member.strip() for member in self.terms.split("=") if member.strip()]
