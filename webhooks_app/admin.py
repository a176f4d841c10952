from django.contrib import admin

from console.tenants.admin_scoping import ReadOnlyAdminMixin, TenantScopedAdmin, TenantScopedInline
from webhooks_app.models import Attempt, Delivery, Endpoint


@admin.register(Endpoint)
class EndpointAdmin(TenantScopedAdmin):
    """Endpoints are added through the API (which shows the secret once); here they
    are browsed and switched off or on."""

    list_display = ["url", "tenant", "active", "created_at"]
    list_filter = ["active", "tenant"]
    search_fields = ["url", "id"]
    list_select_related = ["tenant"]
    fields = ["id", "tenant", "url", "description", "event_types", "active", "previous_secret_expires_at",
              "created_at", "updated_at"]
    readonly_fields = ["id", "tenant", "url", "event_types", "previous_secret_expires_at", "created_at",
                       "updated_at"]

    def has_add_permission(self, request):
        return False


class AttemptInline(ReadOnlyAdminMixin, TenantScopedInline):
    model = Attempt
    fields = ("number", "outcome", "started_at", "duration_ms", "response_status", "error")
    readonly_fields = fields
    extra = 0


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdminMixin, TenantScopedAdmin):
    """Every delivery with every attempt; state `dead` lists the dead letters."""

    list_display = ["created_at", "event_type", "state", "attempts", "next_attempt_at", "endpoint", "tenant"]
    list_filter = ["state", "event_type", "tenant"]
    search_fields = ["id", "event_key"]
    list_select_related = ["tenant", "endpoint"]
    date_hierarchy = "created_at"
    fields = ("id", "tenant", "endpoint", "event_type", "event_key", "state", "attempts", "next_attempt_at",
              "leased_until", "created_at", "finished_at", "payload")
    readonly_fields = fields
    inlines = [AttemptInline]
