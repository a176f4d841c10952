from django.contrib import admin

from console.tenants.admin_scoping import TenantScopedAdmin
from console.tenants.models import Membership, Tenant, TenantHost, TenantOrigin


class TenantHostInline(admin.TabularInline):
    model = TenantHost
    extra = 0


class TenantOriginInline(admin.TabularInline):
    model = TenantOrigin
    extra = 0


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Tenant)
class TenantAdmin(TenantScopedAdmin):
    list_display = ["slug", "name", "time_zone", "minute_cap", "max_call_minutes", "created_at"]
    search_fields = ["slug", "name", "hosts__host"]
    readonly_fields = ["created_at"]
    inlines = [TenantHostInline, TenantOriginInline, MembershipInline]
    fieldsets = [
        (None, {"fields": ["slug", "name", "time_zone", "created_at"]}),
        ("Calls", {"fields": ["minute_cap", "max_call_minutes"]}),
        ("Audio", {"fields": ["language", "recording_enabled", "transcription_enabled", "disclosure_text"]}),
        ("Public leads", {"fields": ["lead_rate_limit"]}),
    ]

    def get_queryset(self, request):
        return Tenant.objects.visible_to(request.user)

    def has_add_permission(self, request):
        # Creating tenants is an operator task of superusers; members manage their own.
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser


@admin.register(Membership)
class MembershipAdmin(TenantScopedAdmin):
    list_display = ["user", "tenant", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["user__username", "user__email", "tenant__slug"]
    autocomplete_fields = ["user"]
