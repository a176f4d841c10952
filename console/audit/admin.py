"""The audit trail in the admin: read-only, for superusers and the owners of a tenant;
and the hooks that record every admin write (used by TenantScopedAdmin)."""
from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME

from console.audit.models import AuditEntry, owned_tenant_ids
from console.audit.services import audit_record, request_id_of


def _tenant_of(obj):
    """The tenant an admin object belongs to (the object itself for a tenant)."""
    if obj is None:
        return None
    if obj._meta.label == "tenants.Tenant":
        return obj
    return getattr(obj, "tenant", None) if getattr(obj, "tenant_id", None) is not None else None


def _record(request, obj, verb, model, *, tenant=None, details=None):
    audit_record(
        actor=f"user:{request.user.get_username()}", action=f"admin.{verb} {model._meta.label_lower}",
        tenant=tenant if tenant is not None else _tenant_of(obj), object_id=str(obj.pk) if obj is not None else "",
        request_id=request_id_of(request), details=details,
    )


class AuditedAdminMixin:
    """Records every add, change, deletion and action of a ModelAdmin in the audit
    trail, beside Django's own change log."""

    def log_addition(self, request, obj, message):
        entry = super().log_addition(request, obj, message)
        _record(request, obj, "add", self.model)
        return entry

    def log_change(self, request, obj, message):
        entry = super().log_change(request, obj, message)
        _record(request, obj, "change", self.model)
        return entry

    def log_deletions(self, request, queryset):
        # Called before the objects are deleted, so their tenants can still be read.
        for obj in queryset:
            _record(request, obj, "delete", self.model)
        return super().log_deletions(request, queryset)

    def get_actions(self, request):
        actions = super().get_actions(request)
        return {name: (_audited(func, name, self.model) if name != "delete_selected" else func, name, description)
                for name, (func, name, description) in actions.items()}


def _audited(func, name, model):
    """An admin action that records what it was run on after it ran."""

    def action(modeladmin, request, queryset):
        selected = [str(pk) for pk in request.POST.getlist(ACTION_CHECKBOX_NAME)][:100]
        tenants = {tenant.pk: tenant for obj in queryset[:100] if (tenant := _tenant_of(obj)) is not None}
        result = func(modeladmin, request, queryset)
        tenant = next(iter(tenants.values())) if len(tenants) == 1 else None
        _record(request, None, f"action:{name}", model, tenant=tenant,
                details={"objects": selected, "tenants": sorted(t.slug for t in tenants.values())})
        return result

    for attribute in ("allowed_permissions", "short_description", "__name__"):
        if hasattr(func, attribute):
            setattr(action, attribute, getattr(func, attribute))
    return action


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ["at", "tenant_slug", "actor", "action", "object_id", "request_id"]
    list_filter = ["action"]
    search_fields = ["actor", "action", "object_id", "request_id", "tenant_slug"]
    date_hierarchy = "at"
    fields = ["id", "at", "tenant_slug", "actor", "action", "object_id", "request_id", "details"]
    readonly_fields = fields  # type: ignore[assignment]  # plain names; the stubs type `fields` as groups

    def get_queryset(self, request):
        return super().get_queryset(request).visible_to(request.user)

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_view_permission(self, request, obj=None):
        user = request.user
        if not (user.is_active and user.is_staff):
            return False
        if user.is_superuser:
            return True
        owned = owned_tenant_ids(user)
        return owned.filter(tenant_id=obj.tenant_id).exists() if obj is not None else owned.exists()

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
