"""Campaigns in the admin: the list with a progress bar and the counts by outcome,
state changes as actions, the contacts with their attempts (read-only; results as
CSV), and the blocklist."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext, pgettext_lazy

from campaigns_app import selectors, services
from campaigns_app.contact_rows import csv_contacts
from campaigns_app.errors import CampaignStateConflict
from campaigns_app.models import BlockedNumber, Campaign, CampaignAttempt, CampaignContact, Outcome
from campaigns_app.parsers import MAX_UPLOAD_BYTES
from campaigns_app.window import DEFAULT_WINDOW, WindowInvalid, window_parse
from console.admin_display import choice_label, local_datetime, phone_cell
from console.admin_export import CsvExportMixin
from console.errors import ApiError
from console.numbers.models import PhoneNumber
from console.phone import InvalidPhoneNumber, to_e164
from console.tenants.admin_scoping import ReadOnlyAdminMixin, TenantScopedAdmin, TenantScopedInline

# The counts shown beside the bar, in this order.
SHOWN_OUTCOMES = (Outcome.REACHED, Outcome.VOICEMAIL, Outcome.NO_ANSWER, Outcome.BUSY, Outcome.FAILED,
                  Outcome.OPTED_OUT, Outcome.SKIPPED_BLOCKLIST, Outcome.SKIPPED_NO_CONSENT)


class ContactsUploadForm(forms.Form):
    file = forms.FileField(label=_("CSV file"), help_text=_(
        "As Excel saves it (“CSV UTF-8” or “CSV (Trennzeichen-getrennt)”): a header line with a phone column "
        "(Telefon, Telefonnummer, Nummer); Vorname and Nachname make the name; every other column is a variable "
        "of the scripts."))


# The calling window as a form: a from and a to per weekday (Sunday never calls).
WINDOW_DAYS = [("mon", _("Monday")), ("tue", _("Tuesday")), ("wed", _("Wednesday")), ("thu", _("Thursday")),
               ("fri", _("Friday")), ("sat", _("Saturday"))]


def _window_fields():
    fields = {}
    for day, label in WINDOW_DAYS:
        for bound, word in (("start", pgettext_lazy("calling window", "from")),
                            ("end", pgettext_lazy("calling window", "until"))):
            fields[f"window_{day}_{bound}"] = forms.TimeField(
                label=format_lazy("{} {}", label, word), required=False, input_formats=["%H:%M"],
                widget=forms.TimeInput(format="%H:%M", attrs={"type": "time"}))
    return fields


WINDOW_FIELDS = list(_window_fields())


class _CampaignForm(forms.ModelForm):
    """The campaign's fields; its calling window as times per weekday (empty: not called
    that day), checked by campaigns_app.window like the API's."""

    class Meta:
        model = Campaign
        fields = ["tenant", "name", "assistant", "from_number", "purpose", "concurrency", "max_attempts",
                  "retry_after_min", "voicemail", "voicemail_touchpoint", "start_at", "end_at"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        window = self.instance.window if self.instance.pk and self.instance.window else DEFAULT_WINDOW
        for day, hours in window.items():
            for bound in ("start", "end"):
                if f"window_{day}_{bound}" in self.fields:
                    self.initial.setdefault(f"window_{day}_{bound}", hours[bound])

    def _window(self, data):
        window = {}
        for day, label in WINDOW_DAYS:
            start, end = data.get(f"window_{day}_start"), data.get(f"window_{day}_end")
            if start is None and end is None:
                continue
            if start is None or end is None:
                self.add_error(f"window_{day}_start", _("Give both times for %(day)s, or neither.") % {"day": label})
                continue
            window[day] = {"start": start.strftime("%H:%M"), "end": end.strftime("%H:%M")}
        try:
            return window_parse(window)
        except WindowInvalid:
            self.add_error(None, _("The calling window needs at least one day, each ending after it starts."))
            return None

    def save(self, commit=True):
        campaign = super().save(commit=False)
        campaign.window = self.window
        if commit:
            campaign.save()
        return campaign

    def clean(self):
        data = super().clean()
        self.window = self._window(data)
        tenant = data.get("tenant") or getattr(self.instance, "tenant", None)
        if tenant is None:
            return data
        if data.get("from_number"):
            try:
                e164 = to_e164(data["from_number"])
            except InvalidPhoneNumber as exc:
                self.add_error("from_number", str(exc))
            else:
                if not PhoneNumber.objects.for_tenant(tenant).filter(e164=e164).exists():
                    self.add_error("from_number", _("Must be one of the tenant's own numbers."))
                data["from_number"] = e164
        if data.get("concurrency") and data["concurrency"] > tenant.campaign_concurrency_limit:
            self.add_error("concurrency", _("At most %(limit)s for this tenant.")
                           % {"limit": tenant.campaign_concurrency_limit})
        if data.get("assistant") and data["assistant"].tenant_id != tenant.pk:
            self.add_error("assistant", _("Not an assistant of this tenant."))
        return data


# The window's fields declared on the class (the admin builds its form from the fieldsets).
CampaignForm = type("CampaignForm", (_CampaignForm,), _window_fields())


def _transition_action(change, label):
    def run(modeladmin, request, queryset):
        changed = 0
        for campaign in queryset:
            try:
                services.campaign_transition(campaign=campaign, change=change)
                changed += 1
            except CampaignStateConflict as exc:
                modeladmin.message_user(request, f"{campaign}: {exc.message}", messages.WARNING)
        if changed:
            modeladmin.message_user(request, _("%(count)s campaign(s) changed.") % {"count": changed})

    run.__name__ = change
    run.short_description = label
    run.allowed_permissions = ("change",)
    return run


def progress_bar(counts):
    percent = selectors.progress_percent(counts)
    return format_html('<progress value="{}" max="100" title="{} %">{} %</progress> {} / {}', percent, percent,
                       percent, counts["done"], counts["total"])


@admin.register(Campaign)
class CampaignAdmin(TenantScopedAdmin):
    form = CampaignForm
    list_display = ["name", "state_label", "purpose_label", "progress", "outcomes", "created"]
    list_filter = ["state", "purpose"]
    search_fields = ["name", "id"]
    list_select_related = ["tenant"]
    readonly_fields = ["id", "upload_link", "state", "paused_reason", "paused_details", "progress", "outcomes",
                       "started_at", "finished_at", "created_at", "updated_at"]
    fieldsets = [
        (None, {"fields": ["id", "tenant", "name", "assistant", "from_number", "purpose", "state", "paused_reason",
                           "paused_details"]}),
        (_("Progress"), {"fields": ["progress", "outcomes", "upload_link", "started_at", "finished_at"]}),
        (_("Calling window"), {"fields": WINDOW_FIELDS}),
        (_("Calling"), {"fields": ["concurrency", "max_attempts", "retry_after_min", "voicemail",
                                   "voicemail_touchpoint", "start_at", "end_at"]}),
        (None, {"fields": ["created_at", "updated_at"]}),
    ]
    actions = [_transition_action("start", _("Start selected campaigns")),
               _transition_action("pause", _("Pause selected campaigns")),
               _transition_action("resume", _("Resume selected campaigns")),
               _transition_action("cancel", _("Cancel selected campaigns"))]

    def get_urls(self):
        return [path("<path:object_id>/contacts/upload/", self.admin_site.admin_view(self.upload_view),
                     name="campaigns_app_campaign_upload")] + super().get_urls()

    @admin.display(description=_("contacts"))
    def upload_link(self, campaign):
        if campaign is None or campaign.pk is None:
            return "—"
        return format_html('<a class="button" href="{}">{}</a>',
                           reverse("admin:campaigns_app_campaign_upload", args=[campaign.pk]),
                           _("Upload contacts (CSV)"))

    def upload_view(self, request, object_id):
        """Contacts from a CSV file as Excel writes it (`;` or `,`, UTF-8 with or without
        BOM, or Windows-1252): the API's import, its report and row errors shown."""
        campaign = self.get_object(request, object_id)
        if campaign is None:
            raise Http404("No such campaign.")
        if not self.has_change_permission(request, campaign):
            raise PermissionDenied
        form = ContactsUploadForm(request.POST or None, request.FILES or None)
        report, problem = None, ""
        if request.method == "POST" and form.is_valid():
            now = timezone.now()
            try:
                rows, errors, _file = csv_contacts(form.cleaned_data["file"].read(MAX_UPLOAD_BYTES + 1),
                                                   time_zone=campaign.tenant.time_zone, now=now)
                report = services.contacts_add(campaign=campaign, rows=rows, errors=errors, now=now)
            except ApiError as exc:
                problem = exc.message if not exc.details else " ".join(
                    str(message) for messages_ in exc.details.values()
                    for message in (messages_ if isinstance(messages_, list) else [messages_]))
        return TemplateResponse(request, "admin/campaigns_app/campaign/upload.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "campaign": campaign,
            "title": _("Upload contacts"), "form": form, "report": report, "problem": problem,
        })

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None or self.has_change_permission(request, obj):
            return fieldsets
        # Who may only view reads the stored window.
        return [(title, {**options, "fields": ["window"] if options["fields"] is WINDOW_FIELDS else options["fields"]})
                for title, options in fieldsets]

    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        # One grouped query for the counts of the page's campaigns.
        self._counts = selectors.counts_for([campaign.pk for campaign in changelist.result_list])
        return changelist

    def _counts_of(self, campaign):
        counts = getattr(self, "_counts", {})
        return counts[campaign.pk] if campaign.pk in counts else selectors.counts_of(campaign)

    @admin.display(description=_("state"), ordering="state")
    def state_label(self, campaign):
        return choice_label(campaign, "state")

    @admin.display(description=_("purpose"), ordering="purpose")
    def purpose_label(self, campaign):
        return choice_label(campaign, "purpose")

    @admin.display(description=_("progress"))
    def progress(self, campaign):
        if campaign.pk is None:
            return "—"
        return progress_bar(self._counts_of(campaign))

    @admin.display(description=_("outcomes"))
    def outcomes(self, campaign):
        if campaign.pk is None:
            return "—"
        counts = self._counts_of(campaign)
        shown = [(pgettext("choice", outcome.label), counts[outcome.value]) for outcome in SHOWN_OUTCOMES
                 if counts[outcome.value]]
        waiting = counts["pending"] + counts["calling"]
        if waiting:
            shown.insert(0, (_("open"), waiting))
        return format_html_join(", ", "{}: {}", shown) or "—"

    @admin.display(description=_("created"), ordering="created_at")
    def created(self, campaign):
        return local_datetime(campaign.created_at)


class AttemptInline(ReadOnlyAdminMixin, TenantScopedInline):
    model = CampaignAttempt
    fields = ("number", "state", "outcome", "answered_by", "call", "claimed_at", "ended_at")
    readonly_fields = fields
    extra = 0


@admin.register(CampaignContact)
class CampaignContactAdmin(CsvExportMixin, ReadOnlyAdminMixin, TenantScopedAdmin):
    list_display = ["number", "name", "campaign", "status_label", "outcome_label", "attempts", "last_attempt"]
    list_filter = ["status", "outcome", "campaign"]
    search_fields = ["phone", "name", "id"]
    list_select_related = ["campaign", "tenant"]
    show_full_result_count = False
    inlines = [AttemptInline]
    fields = ("id", "campaign", "phone", "name", "variables", "b2b", "consent_source", "consent_at", "consent_text",
              "row", "status", "outcome", "attempts", "due_at", "last_attempt_at", "completed_at", "redacted",
              "created_at")
    readonly_fields = fields
    csv_name = "kampagnen-kontakte"
    csv_columns = (
        ("id", lambda c: c.pk), ("campaign", lambda c: c.campaign.name), ("phone", lambda c: c.phone),
        ("name", lambda c: c.name), ("status", lambda c: c.status), ("outcome", lambda c: c.outcome),
        ("attempts", lambda c: c.attempts), ("consentSource", lambda c: c.consent_source),
        ("consentAt", lambda c: c.consent_at.isoformat() if c.consent_at else ""),
        ("consentText", lambda c: c.consent_text),
    )

    @admin.display(description=_("number"), ordering="phone")
    def number(self, contact):
        return phone_cell(contact.phone)

    @admin.display(description=_("status"), ordering="status")
    def status_label(self, contact):
        return choice_label(contact, "status")

    @admin.display(description=_("outcome"), ordering="outcome")
    def outcome_label(self, contact):
        return choice_label(contact, "outcome") if contact.outcome else "—"

    @admin.display(description=_("last attempt"), ordering="last_attempt_at")
    def last_attempt(self, contact):
        return local_datetime(contact.last_attempt_at)


class BlockedNumberForm(forms.ModelForm):
    class Meta:
        model = BlockedNumber
        fields = ["tenant", "phone", "reason", "note"]

    def clean_phone(self):
        try:
            return to_e164(self.cleaned_data["phone"])
        except InvalidPhoneNumber as exc:
            raise forms.ValidationError(str(exc)) from None


@admin.register(BlockedNumber)
class BlockedNumberAdmin(TenantScopedAdmin):
    """Numbers no campaign calls. Added here like through the API (waiting contacts end
    skipped); an operator may remove an opt-out, with the callee's new consent."""

    form = BlockedNumberForm
    list_display = ["number", "reason_label", "note", "created"]
    list_filter = ["reason"]
    search_fields = ["phone", "note"]
    list_select_related = ["tenant"]
    # An erased number's entry holds its pseudonym since `erased_at` (docs/privacy.md).
    readonly_fields = ["call_id", "created_at", "erased_at"]

    def get_readonly_fields(self, request, obj=None):
        # A number that is on the list stays that number; its note may change.
        return [*self.readonly_fields, "tenant", "phone", "reason"] if obj is not None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        if obj.reason == BlockedNumber.Reason.OPT_OUT:
            entry = services.opt_out(tenant=obj.tenant, phone=obj.phone, note=obj.note)
        else:
            entry, _created = services.blocklist_add(tenant=obj.tenant, phone=obj.phone, note=obj.note)
        obj.pk, obj.created_at, obj._state.adding = entry.pk, entry.created_at, False

    @admin.display(description=_("number"), ordering="phone")
    def number(self, entry):
        return phone_cell(entry.phone)

    @admin.display(description=_("reason"), ordering="reason")
    def reason_label(self, entry):
        return choice_label(entry, "reason")

    @admin.display(description=_("created"), ordering="created_at")
    def created(self, entry):
        return local_datetime(entry.created_at)
