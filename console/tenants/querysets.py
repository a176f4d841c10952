from django.db import models


class TenantOwnedQuerySet(models.QuerySet):
    """Queries of tenant data start here: `Model.objects.for_tenant(request.tenant)`."""

    def for_tenant(self, tenant):
        return self.filter(tenant=tenant)

    def visible_to(self, user):
        """What a console (admin) user may see: everything for superusers, else the
        data of the tenants they are a member of."""
        if user.is_superuser:
            return self
        return self.filter(tenant__memberships__user=user)
