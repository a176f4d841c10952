"""The callback inbox: open callbacks first by the time the caller asked for, due and
overdue ones marked, one-click status changes, "Rückruf starten", notes, CSV."""
from datetime import timedelta

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import F
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext as _t
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext
from django.views.decorators.http import require_POST

from console.admin_display import choice_label, format_lazy_percent, local_datetime, phone_cell
from console.admin_export import CsvExportMixin
from console.errors import ApiError
from console.phone import search_digits
from console.tenants.admin_scoping import TenantScopedAdmin
from leads_app.callbacks import callback_start
from leads_app.models import OPEN_STATUSES, Lead
from leads_app.services import lead_set_status, lead_update, leads_set_status

# The one-click buttons of a row: the usual next steps.
QUICK_STATUSES = (Lead.Status.CONTACTED, Lead.Status.CONVERTED, Lead.Status.LOST)

# German words for what can go wrong when placing a callback (the API's messages are English).
CALLBACK_ERRORS = {
    "minute_cap_reached": _("The minute cap of this month is used up; no call was placed."),
    "carrier_unavailable": _("The carrier could not place the call. Please try again later."),
    "callbacks_unavailable": _("No voice runtime is installed to place callbacks."),
}


def _status_action(status):
    """An admin action that sets every selected lead to `status`."""

    def action(modeladmin, request, queryset):
        changed = leads_set_status(leads=queryset, status=status)
        modeladmin.message_user(request, _t("%(count)s lead(s) marked as %(status)s.") % {
            "count": changed, "status": pgettext("choice", status.label)}, messages.SUCCESS)

    action.__name__ = f"mark_{status.value}"
    # Formatted when shown, in the request's language (a `%` on the lazy text would fix
    # the language of the import).
    action.short_description = format_lazy_percent(_("Mark selected leads as %(status)s"),
                                                   status=status.label)
    action.allowed_permissions = ("change",)
    return action


class DueFilter(admin.SimpleListFilter):
    """Open callbacks whose time has come: today (in the tenant's zone) or earlier."""

    title = _("due")
    parameter_name = "due"

    def lookups(self, request, model_admin):
        return [("today", _("due today")), ("overdue", _("overdue"))]

    def queryset(self, request, queryset):
        now = timezone.now()
        open_callbacks = queryset.filter(status__in=OPEN_STATUSES, preferred_at_resolved__isnull=False)
        if self.value() == "overdue":
            return open_callbacks.filter(preferred_at_resolved__lt=now)
        if self.value() == "today":
            end_of_today = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0) \
                + timedelta(days=1)
            return open_callbacks.filter(preferred_at_resolved__gte=now, preferred_at_resolved__lt=end_of_today)
        return queryset


@admin.register(Lead)
class LeadAdmin(CsvExportMixin, TenantScopedAdmin):
    change_list_template = "admin/leads_app/lead/change_list.html"
    list_display = ["preferred", "caller", "kind_label", "status_label", "repeats", "quick", "received"]
    list_filter = ["status", DueFilter, "kind", "tenant"]
    search_fields = ["phone", "id"]
    search_help_text = _("A number in any format (0171 234…, +49 171…) or a lead's id.")
    list_select_related = ["tenant"]
    date_hierarchy = "created_at"
    actions = [_status_action(status) for status in Lead.Status]
    readonly_fields = ["id", "tenant", "kind", "phone", "preferred_at", "preferred_at_resolved", "repeat_count",
                       "repeated_at", "page_url", "consent_version", "created_at", "updated_at"]
    fields = ["id", "tenant", "status", "notes", "kind", "phone", "preferred_at", "preferred_at_resolved",
              "repeat_count", "repeated_at", "page_url", "consent_version", "created_at", "updated_at"]
    csv_name = "rueckrufe"
    csv_columns = (
        ("id", lambda lead: lead.id),
        ("received", lambda lead: timezone.localtime(lead.created_at).isoformat()),
        ("kind", lambda lead: lead.kind),
        ("phone", lambda lead: lead.phone),
        ("preferred_at", lambda lead: lead.preferred_at),
        ("preferred_at_resolved", lambda lead: lead.preferred_at_resolved and
         timezone.localtime(lead.preferred_at_resolved).isoformat()),
        ("status", lambda lead: lead.status),
        ("repeats", lambda lead: lead.repeat_count),
        ("notes", lambda lead: lead.notes),
    )

    def get_ordering(self, request):
        # The inbox: open leads first, by the time the caller asked for (none last).
        return [F("preferred_at_resolved").asc(nulls_last=True), "-created_at"]

    def has_add_permission(self, request):
        # Leads come from public pages (or seed_demo), never typed in by hand.
        return False

    def save_model(self, request, obj, form, change):
        """Status and notes are written by the service, which announces a new status
        (`lead.updated`) as the API and the bulk actions do; the form is never saved
        to the model directly."""
        stored = lead_update(lead=obj, status=form.cleaned_data.get("status"), notes=form.cleaned_data.get("notes"))
        obj.status, obj.notes, obj.updated_at = stored.status, stored.notes, stored.updated_at

    def get_search_results(self, request, queryset, search_term):
        """A phone search matches however the number is typed (`0171 234…`, `+49 171…`)."""
        results, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        digits = search_digits(search_term)
        if digits:
            results |= queryset.filter(phone__contains=digits)
        return results, may_have_duplicates

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [path("quick-status/", wrap(self.quick_status), name="leads_app_lead_quick_status"),
                path("<path:object_id>/callback/", wrap(self.start_callback), name="leads_app_lead_callback"),
                *super().get_urls()]

    @admin.display(description=_("preferred time"), ordering="preferred_at_resolved")
    def preferred(self, lead):
        shown = local_datetime(lead.preferred_at_resolved)
        if lead.status not in OPEN_STATUSES or lead.preferred_at_resolved is None:
            return shown
        now = timezone.now()
        if lead.preferred_at_resolved < now:
            return format_html('<span class="lead-overdue">{} · {}</span>', shown, _t("overdue"))
        if timezone.localtime(lead.preferred_at_resolved).date() == timezone.localtime(now).date():
            return format_html('<span class="lead-due">{} · {}</span>', shown, _t("due today"))
        return shown

    @admin.display(description=_("caller"))
    def caller(self, lead):
        return phone_cell(lead.phone)

    @admin.display(description=_("kind"), ordering="kind")
    def kind_label(self, lead):
        return choice_label(lead, "kind")

    @admin.display(description=_("status"), ordering="status")
    def status_label(self, lead):
        return choice_label(lead, "status")

    @admin.display(description=_("repeats"), ordering="repeat_count")
    def repeats(self, lead):
        return f"×{lead.repeat_count + 1}" if lead.repeat_count else ""

    @admin.display(description=_("received"), ordering="created_at")
    def received(self, lead):
        return local_datetime(lead.created_at)

    @admin.display(description=_("actions"))
    def quick(self, lead):
        """Buttons of the separate form `lead-quick` (a form cannot sit inside the list's own)."""
        buttons = format_html_join(
            "", '<button type="submit" form="lead-quick" class="button quick-status" name="set" value="{}:{}">{}</button> ',
            ((lead.pk, status.value, pgettext("choice", status.label)) for status in QUICK_STATUSES
             if status != lead.status))
        start = format_html(
            '<button type="submit" form="lead-quick" class="button start-callback" formaction="{}">{}</button>',
            reverse("admin:leads_app_lead_callback", args=[lead.pk]), _t("Start callback"))
        return format_html("{}{}", start, buttons)

    def _visible_lead(self, request, object_id):
        if not self.has_change_permission(request):
            raise PermissionDenied
        return get_object_or_404(self.get_queryset(request), pk=object_id)

    def _back(self, request):
        referer = request.META.get("HTTP_REFERER", "")
        changelist = reverse("admin:leads_app_lead_changelist")
        return HttpResponseRedirect(referer if referer.startswith(request.build_absolute_uri(changelist))
                                    else changelist)

    def quick_status(self, request):
        return require_POST(self._quick_status)(request)

    def _quick_status(self, request):
        lead_id, _sep, status = request.POST.get("set", "").rpartition(":")
        if status not in Lead.Status.values:
            self.message_user(request, _t("Unknown status."), messages.ERROR)
            return self._back(request)
        lead = self._visible_lead(request, lead_id)
        lead_set_status(lead=lead, status=status)
        self.log_change(request, lead, [{"changed": {"fields": ["status"]}}])
        self.message_user(request, _t("Lead %(lead)s: %(status)s.") % {
            "lead": lead, "status": pgettext("choice", Lead.Status(status).label)}, messages.SUCCESS)
        return self._back(request)

    def start_callback(self, request, object_id):
        return require_POST(self._start_callback)(request, object_id)

    def _start_callback(self, request, object_id):
        lead = self._visible_lead(request, unquote(object_id))
        try:
            call = callback_start(lead=lead)
        except ApiError as exc:
            self.message_user(request, CALLBACK_ERRORS.get(exc.code, _t("The call could not be placed.")),
                              messages.ERROR)
            return self._back(request)
        if lead.status == Lead.Status.NEW:
            lead_set_status(lead=lead, status=Lead.Status.CONTACTED)
        self.log_change(request, lead, _t("Callback started: call %(call)s") % {"call": call.pk})
        call_url = reverse("admin:calls_app_call_change", args=[call.pk])
        self.message_user(request, format_html('{} <a href="{}">{}</a>', _t("Callback started."), call_url,
                                               _t("Show the call")), messages.SUCCESS)
        return self._back(request)
