"""Calls are read-only here (the voice runtime is their only writer); carriers are
created with `manage.py create_carrier`, which shows the secret once."""
from django.contrib import admin
from django.utils.html import format_html, format_html_join

from calls_app.models import Call, Carrier, UsageCounter
from console.audit.admin import AuditedAdminMixin
from console.tenants.admin_scoping import ReadOnlyAdminMixin, TenantScopedAdmin

TRANSCRIPT_STYLES = {
    "assistant": "background:#eef4ff;border-left:3px solid #3b6fd8;",
    "user": "background:#f3f3f3;border-left:3px solid #777;margin-left:2em;",
    "system": "background:#fff8e1;border-left:3px dashed #c99a00;font-style:italic;font-size:90%;",
}


class ReadOnlyAdmin(ReadOnlyAdminMixin, TenantScopedAdmin):
    pass


@admin.register(Call)
class CallAdmin(ReadOnlyAdmin):
    list_display = ["id", "created_at", "tenant", "direction", "from_e164", "to_e164", "status", "disclosed",
                    "duration", "carrier"]
    list_filter = ["direction", "status", "disclosed", "carrier"]
    search_fields = ["id", "from_e164", "to_e164", "carrier_call_id", "tenant__slug"]
    list_select_related = ["tenant"]
    date_hierarchy = "created_at"
    exclude = ["tenant"]
    readonly_fields = ["id", "tenant_slug", "carrier", "carrier_call_id", "direction", "from_e164", "to_e164",
                       "status", "disclosed", "duration", "max_seconds", "reserved_minutes", "reserved_period",
                       "usage_period", "recording_enabled", "transcription_enabled", "recording_url", "lead_id",
                       "created_at", "started_at", "ended_at", "conversation"]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("transcript_entries")

    @admin.display(description="tenant")
    def tenant_slug(self, call):
        return call.tenant.slug

    @admin.display(description="duration")
    def duration(self, call):
        minutes, seconds = divmod(call.seconds, 60)
        return f"{minutes}:{seconds:02d}"

    @admin.display(description="transcript")
    def conversation(self, call):
        entries = call.transcript_entries.all()
        if not entries:
            return "—"
        rows = format_html_join(
            "", '<div style="padding:4px 8px;margin:3px 0;{}"><strong>{}</strong> <small>{}</small><br>{}</div>',
            ((TRANSCRIPT_STYLES.get(e.role, ""), e.get_role_display(), e.ts.strftime("%H:%M:%S"), e.text)
             for e in entries),
        )
        return format_html('<div style="max-width:48em">{}</div>', rows)


@admin.register(UsageCounter)
class UsageCounterAdmin(ReadOnlyAdmin):
    list_display = ["tenant", "period", "minutes", "seconds", "calls", "reserved_minutes", "updated_at"]
    list_filter = ["period"]
    search_fields = ["tenant__slug", "period"]
    list_select_related = ["tenant"]


@admin.register(Carrier)
class CarrierAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ["id", "name", "caller_id", "created_at", "secret_rotated_at"]
    fields = ["id", "name", "caller_id", "created_at", "secret_rotated_at"]
    readonly_fields = ["id", "created_at", "secret_rotated_at"]

    def has_add_permission(self, request):
        # The secret is shown once by `manage.py create_carrier`, never in the admin.
        return False

    def has_delete_permission(self, request, obj=None):
        return False
