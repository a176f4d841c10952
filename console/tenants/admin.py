from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

from console.quotas import quota_usage
from console.tenants.admin_scoping import (
    SuperuserOnlyAdminMixin,
    TenantScopedAdmin,
    TenantScopedInline,
    visible_users,
)
from console.tenants.forms import MembershipForm, TenantOriginForm
from console.tenants.models import Membership, Tenant, TenantHost, TenantOrigin


class TenantHostInline(TenantScopedInline):
    model = TenantHost
    extra = 0


class TenantOriginInline(TenantScopedInline):
    model = TenantOrigin
    form = TenantOriginForm
    extra = 0


class MembershipInline(TenantScopedInline):
    model = Membership
    form = MembershipForm
    extra = 0

    @admin.display(description=_("email address"))
    def email(self, membership):
        """The member's address where the inline is read-only (the form's field is not a
        model field, so Django would show nothing under its bare name)."""
        return membership.user.email or membership.user.get_username()


@admin.register(Tenant)
class TenantAdmin(TenantScopedAdmin):
    list_display = ["slug", "name", "time_zone", "minute_cap", "max_call_minutes", "created_at"]
    search_fields = ["slug", "name", "hosts__host"]
    readonly_fields = ["created_at", "limits"]
    inlines = [TenantHostInline, TenantOriginInline, MembershipInline]
    fieldsets = [
        (None, {"fields": ["slug", "name", "time_zone", "created_at"]}),
        (_("Calls"), {"fields": ["minute_cap", "max_call_minutes"]}),
        (_("Audio"), {"fields": ["language", "recording_enabled", "transcription_enabled", "disclosure_text"]}),
        (_("Public leads"), {"fields": ["lead_rate_limit"]}),
        (_("Campaigns"), {"fields": ["state", "campaign_concurrency_limit"]}),
        (_("Limits"), {"fields": ["limits"]}),
    ]

    @admin.display(description=_("What the tenant keeps, of its maximum"))
    def limits(self, tenant):
        """Each per-tenant cap (console.quotas): what the tenant keeps and the maximum,
        with the setting that holds it."""
        if tenant is None or tenant.pk is None:
            return "–"
        rows = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            ((quota.label, "–" if used is None else f"{used:,}".replace(",", "."), f"{limit:,}".replace(",", "."),
              quota.setting) for quota, used, limit in quota_usage(tenant)))
        return format_html("<table><thead><tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th></tr></thead>"
                           "<tbody>{}</tbody></table>", _("Limit"), _("kept"), _("maximum"), _("setting"), rows)

    def get_queryset(self, request):
        return Tenant.objects.visible_to(request.user)

    def has_module_permission(self, request):
        # The list of tenants is the platform's: a practice reaches its own settings from
        # the dashboard ("Einstellungen der Praxis", dashboard_app), not from a list of one.
        return request.user.is_superuser

    def has_add_permission(self, request):
        # Creating tenants is an operator task of superusers; members manage their own.
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser


@admin.register(Membership)
class MembershipAdmin(TenantScopedAdmin):
    form = MembershipForm
    list_display = ["user", "email", "tenant", "role", "created_at"]
    list_filter = ["role"]
    list_select_related = ["user", "tenant"]
    search_fields = ["user__username", "user__email", "tenant__slug"]

    @admin.display(description=_("email address"), ordering="user__email")
    def email(self, membership):
        return membership.user.email


User = get_user_model()
admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class ScopedUserAdmin(UserAdmin):
    """Superusers manage every account. Other staff see only the accounts of their
    tenants' members, read-only and without their permissions: they add people
    through memberships (by e-mail), and cannot hand anyone, themselves included,
    rights or another account's password."""

    MEMBER_FIELDS = ["username", "email", "first_name", "last_name", "is_active", "last_login", "date_joined"]

    def get_queryset(self, request):
        users = super().get_queryset(request)  # ordered as the admin orders users
        return users if request.user.is_superuser else users.filter(pk__in=visible_users(request.user).values("pk"))

    def get_fieldsets(self, request, obj=None):
        if request.user.is_superuser:
            return super().get_fieldsets(request, obj)
        return [(None, {"fields": self.MEMBER_FIELDS})]

    def get_list_filter(self, request):
        return super().get_list_filter(request) if request.user.is_superuser else ["is_active"]

    def has_add_permission(self, request):
        return request.user.is_superuser and super().has_add_permission(request)

    def has_change_permission(self, request, obj=None):
        return request.user.is_superuser and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser and super().has_delete_permission(request, obj)


@admin.register(Group)
class SuperuserGroupAdmin(SuperuserOnlyAdminMixin, GroupAdmin):
    """Groups hand out permissions across all tenants: a superuser's matter."""
