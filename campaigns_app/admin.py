"""Campaigns in the admin: the list with a progress bar and the counts by outcome,
state changes as actions, the contacts with their attempts (read-only; results as
CSV), and the blocklist."""
from django import forms
from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext

from campaigns_app import selectors, services
from campaigns_app.errors import CampaignStateConflict
from campaigns_app.models import BlockedNumber, Campaign, CampaignAttempt, CampaignContact, Outcome
from campaigns_app.window import WindowInvalid, window_parse
from console.admin_display import choice_label, local_datetime, phone_cell
from console.admin_export import CsvExportMixin
from console.numbers.models import PhoneNumber
from console.phone import InvalidPhoneNumber, to_e164
from console.tenants.admin_scoping import ReadOnlyAdminMixin, TenantScopedAdmin, TenantScopedInline

# The counts shown beside the bar, in this order.
SHOWN_OUTCOMES = (Outcome.REACHED, Outcome.VOICEMAIL, Outcome.NO_ANSWER, Outcome.BUSY, Outcome.FAILED,
                  Outcome.OPTED_OUT, Outcome.SKIPPED_BLOCKLIST, Outcome.SKIPPED_NO_CONSENT)


class CampaignForm(forms.ModelForm):
    class Meta:
        model = Campaign
        fields = ["tenant", "name", "assistant", "from_number", "purpose", "window", "concurrency", "max_attempts",
                  "retry_after_min", "voicemail", "voicemail_touchpoint", "start_at", "end_at"]

    def clean_window(self):
        try:
            return window_parse(self.cleaned_data["window"])
        except WindowInvalid as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self):
        data = super().clean()
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
    readonly_fields = ["id", "state", "paused_reason", "paused_details", "progress", "outcomes", "started_at",
                       "finished_at", "created_at", "updated_at"]
    fieldsets = [
        (None, {"fields": ["id", "tenant", "name", "assistant", "from_number", "purpose", "state", "paused_reason",
                           "paused_details"]}),
        (_("Progress"), {"fields": ["progress", "outcomes", "started_at", "finished_at"]}),
        (_("Calling"), {"fields": ["window", "concurrency", "max_attempts", "retry_after_min", "voicemail",
                                   "voicemail_touchpoint", "start_at", "end_at"]}),
        (None, {"fields": ["created_at", "updated_at"]}),
    ]
    actions = [_transition_action("start", _("Start selected campaigns")),
               _transition_action("pause", _("Pause selected campaigns")),
               _transition_action("resume", _("Resume selected campaigns")),
               _transition_action("cancel", _("Cancel selected campaigns"))]

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
