"""Calls are read-only here (the voice runtime is their only writer); carriers are
created with `manage.py create_carrier`, which shows the secret once."""
from django import forms
from django.contrib import admin
from django.utils.html import format_html, format_html_join

from calls_app.models import Call, Carrier, UsageCounter
from console.audit.admin import AuditedAdminMixin
from console.phone import InvalidPhoneNumber, to_e164
from console.tenants.admin_scoping import ReadOnlyAdminMixin, SuperuserOnlyAdminMixin, TenantScopedAdmin


class ReadOnlyAdmin(ReadOnlyAdminMixin, TenantScopedAdmin):
    pass


@admin.register(Call)
class CallAdmin(ReadOnlyAdmin):
    class Media:
        # The transcript's looks; a file, as the admin's Content-Security-Policy runs no inline style.
        css = {"all": ["calls_app/admin.css"]}

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
            "", '<div class="transcript-line transcript-{}"><strong>{}</strong> <small>{}</small><br>{}</div>',
            ((e.role, e.get_role_display(), e.ts.strftime("%H:%M:%S"), e.text) for e in entries),
        )
        return format_html('<div class="transcript">{}</div>', rows)


@admin.register(UsageCounter)
class UsageCounterAdmin(ReadOnlyAdmin):
    list_display = ["tenant", "period", "minutes", "seconds", "calls", "reserved_minutes", "updated_at"]
    list_filter = ["period"]
    search_fields = ["tenant__slug", "period"]
    list_select_related = ["tenant"]


class CarrierAdminForm(forms.ModelForm):
    class Meta:
        model = Carrier
        fields = ["name", "caller_id"]

    def clean_caller_id(self):
        """Stored as E.164 (`030 1234567` → `+49301234567`): it is dialled from."""
        raw = self.cleaned_data["caller_id"]
        try:
            return to_e164(raw) if raw.strip() else ""
        except InvalidPhoneNumber as exc:
            raise forms.ValidationError(str(exc)) from None


@admin.register(Carrier)
class CarrierAdmin(SuperuserOnlyAdminMixin, AuditedAdminMixin, admin.ModelAdmin):
    """Carriers serve every tenant: only superusers see or change them."""

    form = CarrierAdminForm
    list_display = ["id", "name", "caller_id", "created_at", "secret_rotated_at"]
    fields = ["id", "name", "caller_id", "created_at", "secret_rotated_at"]
    readonly_fields = ["id", "created_at", "secret_rotated_at"]

    def has_add_permission(self, request):
        # The secret is shown once by `manage.py create_carrier`, never in the admin.
        return False

    def has_delete_permission(self, request, obj=None):
        return False
