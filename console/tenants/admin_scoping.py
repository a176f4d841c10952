"""What a staff member who is not a superuser may see and pick in the admin.

Members see their tenants, those tenants' data and the accounts of those tenants'
members; superusers see everything. The base classes here apply that everywhere the
admin lists rows of another model: the changelist and change pages, the choices of
foreign-key and many-to-many fields (and so the autocomplete's selected values), and
the related-field filters of the changelist. The autocomplete's search results come
from the target model's admin, which is scoped the same way.
"""
from django.contrib import admin
from django.contrib.admin.utils import get_fields_from_path
from django.contrib.auth import get_user_model
from django.db.models import Q

from console.audit.admin import AuditedAdminMixin
from console.tenants.models import Membership


def visible_users(viewer):
    """The user accounts `viewer` may see: all for superusers, else the members of
    the viewer's tenants (and the viewer)."""
    users = get_user_model()._default_manager.all()
    if viewer.is_superuser:
        return users
    colleagues = Membership.objects.filter(tenant__memberships__user=viewer).values("user")
    return users.filter(Q(pk__in=colleagues) | Q(pk=viewer.pk))


def visible_rows(model, viewer):
    """The rows of `model` that `viewer` may see, or None for platform data (rows
    that belong to no tenant, e.g. carriers or registry lanes), which needs no scoping."""
    if model is get_user_model():
        return visible_users(viewer)
    rows = model._default_manager.all()
    return rows.visible_to(viewer) if hasattr(rows, "visible_to") else None


class VisibleRelatedFieldListFilter(admin.RelatedFieldListFilter):
    """A related-field filter that offers only the rows the member may see (the
    plain one lists every tenant's name)."""

    def field_choices(self, field, request, model_admin):
        visible = visible_rows(field.related_model, request.user)
        if visible is None:
            return super().field_choices(field, request, model_admin)
        own_limit = field.get_limit_choices_to() if hasattr(field, "get_limit_choices_to") else None
        limit = Q(pk__in=visible.values("pk")) & (Q(**own_limit) if isinstance(own_limit, dict) else own_limit or Q())
        ordering = self.field_admin_ordering(field, request, model_admin)
        return field.get_choices(include_blank=False, ordering=ordering, limit_choices_to=limit)


class VisibleRelationsMixin:
    """Scopes the choices of relation fields and the related-field filters."""

    def get_field_queryset(self, db, db_field, request):
        ordered = super().get_field_queryset(db, db_field, request)
        visible = visible_rows(db_field.remote_field.model, request.user)
        if visible is None:
            return ordered
        if ordered is not None:
            visible = visible.order_by(*ordered.query.order_by)
        return visible.using(db)

    def get_list_filter(self, request):
        return [self._visible_filter(entry) for entry in super().get_list_filter(request)]

    def _visible_filter(self, entry):
        """`"tenant"` becomes `("tenant", VisibleRelatedFieldListFilter)`; other filters stay."""
        if isinstance(entry, str) and get_fields_from_path(self.model, entry)[-1].is_relation:
            return (entry, VisibleRelatedFieldListFilter)
        if isinstance(entry, (list, tuple)) and entry[1] is admin.RelatedFieldListFilter:
            return (entry[0], VisibleRelatedFieldListFilter)
        return entry


class TenantScopedAdmin(AuditedAdminMixin, VisibleRelationsMixin, admin.ModelAdmin):
    """Admin of tenant data: a staff member who is not a superuser sees and picks
    only the tenants they are a member of, and those tenants' data.

    Works for every model whose queryset has `visible_to(user)`. Every add, change,
    deletion and action is recorded in the audit trail (console.audit).
    """

    def get_queryset(self, request):
        return super().get_queryset(request).visible_to(request.user)


class TenantScopedInline(VisibleRelationsMixin, admin.TabularInline):
    """An inline whose relation fields offer only what the member may see."""


class SuperuserOnlyAdminMixin:
    """Platform-wide settings (carriers, permission groups): only superusers see or
    change them, whatever permissions a staff member was given."""

    def has_module_permission(self, request):
        return request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_add_permission(self, request, *args):
        return request.user.is_superuser and super().has_add_permission(request, *args)

    def has_change_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser and super().has_delete_permission(request, obj)


class ReadOnlyAdminMixin:
    """For data that has another source of truth (calls written by the voice
    runtime, the registry document): operators browse it, they never edit it."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
