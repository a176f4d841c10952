from django.contrib import admin, messages

from console.phone import search_digits
from console.tenants.admin_scoping import TenantScopedAdmin
from leads_app.models import Lead
from leads_app.services import leads_set_status


def _status_action(status):
    """An admin action that sets every selected lead to `status`."""

    def action(modeladmin, request, queryset):
        changed = leads_set_status(leads=queryset, status=status)
        modeladmin.message_user(request, f"{changed} lead(s) marked as {status.label.lower()}.", messages.SUCCESS)

    action.__name__ = f"mark_{status.value}"
    action.short_description = f"Mark selected leads as {status.label.lower()}"
    action.allowed_permissions = ("change",)
    return action


@admin.register(Lead)
class LeadAdmin(TenantScopedAdmin):
    list_display = ["created_at", "phone", "kind", "status", "preferred_at", "preferred_at_resolved", "tenant"]
    list_filter = ["status", "kind", "tenant"]
    search_fields = ["phone", "id"]
    list_select_related = ["tenant"]
    date_hierarchy = "created_at"
    actions = [_status_action(status) for status in Lead.Status]
    readonly_fields = ["id", "tenant", "kind", "phone", "preferred_at", "preferred_at_resolved", "page_url",
                       "consent_version", "created_at", "updated_at"]
    fields = ["id", "tenant", "status", "kind", "phone", "preferred_at", "preferred_at_resolved", "page_url",
              "consent_version", "created_at", "updated_at"]

    def has_add_permission(self, request):
        # Leads come from public pages (or seed_demo), never typed in by hand.
        return False

    def get_search_results(self, request, queryset, search_term):
        """A phone search matches however the number is typed (`0171 234…`, `+49 171…`)."""
        results, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        digits = search_digits(search_term)
        if digits:
            results |= queryset.filter(phone__contains=digits)
        return results, may_have_duplicates

