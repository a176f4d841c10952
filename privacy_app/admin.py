"""Privacy in the admin: retention settings per tenant, exports (request and download)
and erasures (request and receipts). Exports and erasures go through the services,
which record them in the audit trail."""
import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

from console.audit.services import request_id_of
from console.errors import ValidationFailed
from console.ids import ID_LENGTH
from console.phone import InvalidPhoneNumber, to_e164
from console.tenants.admin_scoping import TenantScopedAdmin
from console.tenants.models import Tenant
from privacy_app import services
from privacy_app.models import Erasure, Export, RetentionSettings


@admin.register(RetentionSettings)
class RetentionSettingsAdmin(TenantScopedAdmin):
    list_display = ["tenant", "transcript_days", "recording_days", "lead_days", "delivery_days", "updated_at"]
    search_fields = ["tenant__slug", "tenant__name"]
    list_select_related = ["tenant"]
    readonly_fields = ["updated_at"]


class SubjectRequestForm(forms.Form):
    """A tenant and either a number or one call (a web call of the voice agent has no number)."""

    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), label=_("tenant"))
    phone = forms.CharField(max_length=40, required=False, label=_("phone number"),
                            help_text=_("Any format: 0171 2345678, +49 171 2345678, 0049…"))
    call_id = forms.CharField(label=_("or call"), max_length=ID_LENGTH, required=False,
                              help_text=_("The id of one call (cl_…), e.g. a web call of the voice agent."))

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["tenant"].queryset = Tenant.objects.visible_to(user)

    def clean_phone(self):
        if not self.cleaned_data["phone"].strip():
            return ""
        try:
            return to_e164(self.cleaned_data["phone"])
        except InvalidPhoneNumber as exc:
            raise forms.ValidationError(exc.localized()) from None

    def clean(self):
        data = super().clean()
        if "phone" in data and bool(data.get("phone")) == bool(data.get("call_id", "").strip()):
            raise forms.ValidationError(_("Enter either a phone number or a call."))
        return data


class ErasureRequestForm(SubjectRequestForm):
    """An erasure cannot be undone: the number (or the call's id) is typed a second time
    before it runs."""

    confirm = forms.CharField(
        label=_("Confirmation"), max_length=40, required=False,
        help_text=_("Type the number (or the call's id) again: the erasure cannot be undone."))

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        typed = data.get("confirm", "").strip()
        if data.get("phone"):
            try:
                confirmed = bool(typed) and to_e164(typed) == data["phone"]
            except InvalidPhoneNumber:
                confirmed = False
        else:
            confirmed = typed == data.get("call_id", "").strip()
        if not confirmed:
            self.add_error("confirm", _("Type the same number (or call id) again to confirm the erasure."))
        return data


def _actor(request):
    return f"user:{request.user.get_username()}"


class RequestByPhoneAdmin(TenantScopedAdmin):
    """The add page asks for a tenant and a number or a call and runs
    `run(tenant, request, e164=, call_id=)`."""

    explanation: str | Promise = ""
    form_class: type[SubjectRequestForm] = SubjectRequestForm

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = self.form_class(request.POST or None, user=request.user)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                obj = self.run(data["tenant"], request, e164=data["phone"] or None,
                               call_id=data["call_id"].strip() or None)
            except ValidationFailed as exc:
                field = "call_id" if "callId" in exc.details else "phone"
                form.add_error(field, " ".join(exc.details.get("callId", exc.details.get("phone", [exc.message]))))
            else:
                return HttpResponseRedirect(reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change",
                                                    args=[obj.pk]))
        meta = self.model._meta
        return TemplateResponse(request, "admin/privacy_app/request.html", {
            **self.admin_site.each_context(request), "opts": meta, "form": form, "title": self.request_title,
            "explanation": self.explanation, "changelist_url": f"admin:{meta.app_label}_{meta.model_name}_changelist",
        })


@admin.register(Export)
class ExportAdmin(RequestByPhoneAdmin):
    list_display = ["id", "tenant", "phone", "call_id", "status", "created_at", "expires_at", "download"]
    list_filter = ["status"]
    search_fields = ["id", "phone", "call_id", "tenant__slug"]
    list_select_related = ["tenant"]
    fields = ("id", "tenant", "phone", "call_id", "status", "requested_by", "created_at", "ready_at", "expires_at",
              "download")
    readonly_fields = fields
    request_title = _("Export a caller's data")
    explanation = _("Everything the tenant holds about the number (or the one call) — calls with transcripts, leads, "
                    "carrier events, webhook deliveries, the voice agent's sessions — as one JSON document. It is "
                    "deleted after 7 days, and by an erasure of the number or the call.")

    def get_queryset(self, request):
        return super().get_queryset(request).defer("document")

    def run(self, tenant, request, *, e164=None, call_id=None):
        export = services.export_create(tenant=tenant, e164=e164, call_id=call_id, actor=_actor(request),
                                        request_id=request_id_of(request))
        if export.status != Export.Status.READY:
            self.message_user(request, _("The export is large: it is built by the next `build_exports` run."),
                              messages.WARNING)
        return export

    @admin.display(description=_("download"))
    def download(self, export):
        if export.status != Export.Status.READY or export.expires_at <= timezone.now():
            return "—"
        url = reverse("admin:privacy_app_export_download", args=[export.pk])
        return format_html('<a href="{}">JSON</a>', url)

    def get_urls(self):
        return [path("<str:export_id>/download/", self.admin_site.admin_view(self.download_view),
                     name="privacy_app_export_download")] + super().get_urls()

    def download_view(self, request, export_id):
        export = self.get_queryset(request).defer(None).filter(pk=export_id).first()
        if export is None or not self.has_view_permission(request, export):
            raise Http404("No such export.")
        if export.status != Export.Status.READY or export.expires_at <= timezone.now():
            raise Http404("This export is not ready or has expired.")
        services.export_record_download(export=export, actor=_actor(request), request_id=request_id_of(request))
        response = HttpResponse(json.dumps(export.document, ensure_ascii=False, indent=2),
                                content_type="application/json; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{export.pk}.json"'
        response["Cache-Control"] = "no-store"
        return response


# The receipt's counts as the admin names them (the API keeps its keys, docs/api.md).
RECEIPT_LABELS = {
    "calls": _("calls"), "transcriptLines": _("transcript lines"), "recordingLinks": _("recording links"),
    "carrierEvents": _("carrier events"), "leads": _("leads"), "exports": _("exports"),
    "idempotencyRecords": _("idempotency records"), "adminLogEntries": _("admin log entries"),
    "webhookDeliveries": _("webhook deliveries"), "analyses": _("call analyses"),
    "campaignContacts": _("campaign contacts"), "blocklistEntries": _("blocklist entries"), "sms": _("SMS"),
    "agentSessions": _("voice agent sessions"),
}


@admin.register(Erasure)
class ErasureAdmin(RequestByPhoneAdmin):
    form_class = ErasureRequestForm
    list_display = ["id", "tenant", "erased_at", "receipt", "requested_by"]
    search_fields = ["id", "tenant__slug"]
    list_select_related = ["tenant"]
    fields = ("id", "tenant", "erased_at", "receipt", "requested_by")
    readonly_fields = fields

    @admin.display(description=_("removed"))
    def receipt(self, erasure):
        """What was removed, in words ("3 Anrufe"): no JSON keys."""
        removed = [(count, RECEIPT_LABELS.get(kind, kind)) for kind, count in (erasure.counts or {}).items() if count]
        if not removed:
            return _("nothing")
        return format_html_join(", ", "{} {}", removed)
    request_title = _("Erase a caller's data")
    explanation = _("Removes the number (or the one call's data) from every call, transcript, lead, carrier event, "
                    "webhook delivery, voice agent session, idempotency record, campaign contact and export of the "
                    "tenant: the number is replaced by a pseudonym, transcripts and leads are deleted, pending webhook "
                    "deliveries that carry it are stopped, open campaign contacts are never called. A blocklist entry "
                    "of the number is kept under the pseudonym, so the person stays blocked. This cannot be undone. "
                    "The receipt counts what was removed and names no one.")

    def run(self, tenant, request, *, e164=None, call_id=None):
        return services.erasure_create(tenant=tenant, e164=e164, call_id=call_id, actor=_actor(request),
                                       request_id=request_id_of(request))
