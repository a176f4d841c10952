from django.contrib import admin

from console.audit.admin import AuditedAdminMixin


class TenantScopedAdmin(AuditedAdminMixin, admin.ModelAdmin):
    """Admin of tenant data: a staff member who is not a superuser sees and picks
    only the tenants they are a member of, and those tenants' data.

    Works for every model whose queryset has `visible_to(user)`. Every add, change,
    deletion and action is recorded in the audit trail (console.audit).
    """

    def get_queryset(self, request):
        return super().get_queryset(request).visible_to(request.user)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        related = db_field.related_model._default_manager.all()
        if hasattr(related, "visible_to"):
            kwargs["queryset"] = related.visible_to(request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class ReadOnlyAdminMixin:
    """For data that has another source of truth (calls written by the voice
    runtime, the registry document): operators browse it, they never edit it."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
