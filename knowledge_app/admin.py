"""Knowledge in the admin: documents uploaded and listed (each with its passages to
read), synonym groups edited; scoped to the operator's tenants like all tenant data."""
from pathlib import Path

from django import forms
from django.contrib import admin
from django.template.defaultfilters import filesizeformat
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

from console.admin_display import choice_label, local_datetime
from console.errors import ApiError
from console.tenants.admin_scoping import TenantScopedAdmin
from knowledge_app import readers, services
from knowledge_app.models import KnowledgeDocument, KnowledgeSynonym

# Passages shown on a document's page (a document may have thousands).
PREVIEW_PASSAGES = 50

# German words for why an upload was refused (the API's messages are English), by the
# error's code and, where it has one, its reason.
UPLOAD_ERRORS = {
    "document_too_large": _("The document is larger than the 2 MB a document may have."),
    "unsupported_document_type": _("Upload plain text (.txt), Markdown (.md) or PDF (.pdf)."),
    "knowledge_limit_reached": _("The tenant's knowledge is full (documents or megabytes). Delete documents first."),
    "not_utf8": _("The file is not UTF-8 text. Save it as UTF-8 and upload it again."),
    "binary": _("The file holds binary data, not text."),
    "pdf_as_text": _("The file is a PDF: upload it with the extension .pdf."),
    "line_too_long": _("A line of the text is endlessly long. Break the text into lines and paragraphs."),
    "no_text": _("The document holds no text (a scanned PDF?)."),
    "pdf_unreadable": _("The file is not a readable PDF."),
    "pdf_encrypted": _("The PDF is encrypted. Upload it without a password."),
    "too_many_pages": _("The PDF has more pages than allowed."),
    "too_much_text": _("The document holds more text than allowed."),
    "too_complex": _("The PDF is too deeply nested or too large once decompressed."),
    "timeout": _("Reading the PDF took too long; it was stopped."),
    "resources": _("Reading the PDF needed too much memory or processor time; it was stopped."),
}
INVALID_TITLE = _("Enter a title of 1 to 200 printable characters.")


def _message(error):
    reason = error.details.get("reason") if isinstance(error.details, dict) else None
    return UPLOAD_ERRORS.get(reason) or UPLOAD_ERRORS.get(error.code) or _("The document could not be read.")


class KnowledgeDocumentAddForm(forms.ModelForm):
    file = forms.FileField(label=_("file"), help_text=_("A .txt, .md or .pdf file of at most 2 MB."))

    class Meta:
        model = KnowledgeDocument
        fields = ["tenant", "title"]
        help_texts = {"title": _("Default: the file's name without its extension.")}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["title"].required = False
        self.read = None

    def clean(self):
        cleaned = super().clean()
        tenant, upload = cleaned.get("tenant"), cleaned.get("file")
        if tenant is None or upload is None:
            return cleaned
        title = cleaned.get("title") or Path(upload.name or "").stem or upload.name
        try:
            cleaned["title"] = services.clean_title(title)
        except ApiError:
            self.add_error("title", INVALID_TITLE)
            return cleaned
        try:
            content_type = readers.content_type_of(upload.content_type, upload.name)
            readers.check_size(upload.size)  # before reading it
            self.read = services.knowledge_document_read(tenant=tenant, content_type=content_type,
                                                         data=upload.read())
        except ApiError as error:
            self.add_error("file", _message(error))
        return cleaned


@admin.register(KnowledgeDocument)
class KnowledgeDocumentAdmin(TenantScopedAdmin):
    """Upload a document (it is read, split into passages and indexed at once), see its
    passages, delete it. Documents are not edited: upload the new version instead."""

    list_display = ["title", "tenant", "content_type_label", "size", "passage_count", "status_label", "created"]
    list_filter = ["content_type", "tenant"]
    search_fields = ["title", "id"]
    list_select_related = ["tenant"]
    fields = ("id", "tenant", "title", "content_type_label", "size", "characters", "passage_count", "status_label",
              "created", "passage_preview")
    readonly_fields = fields

    @admin.display(description=_("file type"), ordering="content_type")
    def content_type_label(self, document):
        return choice_label(document, "content_type")

    @admin.display(description=_("status"), ordering="status")
    def status_label(self, document):
        return choice_label(document, "status")

    @admin.display(description=_("size"), ordering="size_bytes")
    def size(self, document):
        return filesizeformat(document.size_bytes)

    @admin.display(description=_("created"), ordering="created_at")
    def created(self, document):
        return local_datetime(document.created_at)

    @admin.display(description=_("passages"))
    def passage_preview(self, document):
        passages = document.passages.all()[:PREVIEW_PASSAGES]
        rows = format_html_join("", '<li><strong>{}</strong><br><span style="white-space: pre-wrap">{}</span></li>',
                                ((passage.heading or "—", passage.text) for passage in passages))
        more = document.passage_count - PREVIEW_PASSAGES
        tail = format_html("<p>{}</p>", _("… and %(count)s more.") % {"count": more}) if more > 0 else ""
        return format_html("<ol>{}</ol>{}", rows, tail)

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = KnowledgeDocumentAddForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        return ["tenant", "title", "file"] if obj is None else self.fields

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def has_change_permission(self, request, obj=None):
        return False  # read-only pages: a new version is a new upload

    def save_model(self, request, obj, form, change):
        document = services.knowledge_document_store(tenant=form.cleaned_data["tenant"],
                                                     title=form.cleaned_data["title"], read=form.read)
        # The admin goes on with `obj` (its message, the audit entry, the redirect).
        for field in KnowledgeDocument._meta.concrete_fields:
            setattr(obj, field.attname, getattr(document, field.attname))
        obj._state.adding, obj._state.db = False, document._state.db

    def delete_model(self, request, obj):
        services.knowledge_document_delete(document=obj)

    def delete_queryset(self, request, queryset):
        for document in queryset:
            services.knowledge_document_delete(document=document)


class KnowledgeSynonymForm(forms.ModelForm):
    class Meta:
        model = KnowledgeSynonym
        fields = ["tenant", "terms"]

    def clean(self):
        cleaned = super().clean()
        terms, tenant = cleaned.get("terms"), cleaned.get("tenant")
        if terms is not None:
            cleaned["members"] = [member.strip() for member in terms.split("=")]
            try:
                services.clean_synonym_groups([cleaned["members"]], field="terms")
            except ApiError:
                self.add_error("terms", _("Enter 2 to 20 different words or short phrases (at most 60 characters "
                                          "each), separated by '='."))
        if tenant is not None and self.instance.pk is None and not services.synonym_room_left(tenant=tenant):
            self.add_error(None, _("The tenant has the most synonym groups allowed."))
        return cleaned


@admin.register(KnowledgeSynonym)
class KnowledgeSynonymAdmin(TenantScopedAdmin):
    """Words the tenant's callers use for the same thing: a question with one of them
    also finds passages with the others."""

    form = KnowledgeSynonymForm
    list_display = ["terms", "tenant"]
    list_filter = ["tenant"]
    search_fields = ["terms"]
    list_select_related = ["tenant"]

    def save_model(self, request, obj, form, change):
        services.knowledge_synonym_group_save(synonym=obj, members=form.cleaned_data["members"])
