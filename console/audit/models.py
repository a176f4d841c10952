"""The audit trail: one entry per write through the API or the admin, per export,
erasure and retention run (docs/privacy.md).

Append-only: an entry is written once and never changed or deleted by the app. The
model refuses a second save and a delete, its queryset refuses `update()` and
`delete()`, the admin grants no add/change/delete, and a test checks that no code
calls them. Entries hold who (API key prefix, staff user name or the command), the
tenant, the action, the object's id, the time and the request id, plus counts or
field names in `details`: never a value that was written, so no personal data
and no secret.
"""
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.models import Membership


class AppendOnly(Exception):
    """Raised by every attempt to change or delete an audit entry."""


class AuditEntryQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnly("Audit entries are never changed.")

    def delete(self):
        raise AppendOnly("Audit entries are never deleted by the app.")

    def for_tenant(self, tenant):
        return self.filter(tenant=tenant)

    def visible_to(self, user):
        """Superusers see every entry; other staff the entries of tenants they own."""
        if user.is_superuser:
            return self
        return self.filter(tenant_id__in=owned_tenant_ids(user))


def owned_tenant_ids(user):
    return Membership.objects.filter(user=user, role=Membership.Role.OWNER).values("tenant_id")


class AuditEntry(models.Model):
    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("au"), editable=False)
    # No database constraint and no cascade: the trail outlives a deleted tenant (its
    # slug stays in `tenant_slug`).
    tenant = models.ForeignKey("tenants.Tenant", null=True, blank=True, on_delete=models.DO_NOTHING,
                               db_constraint=False, related_name="+", verbose_name=_("tenant"))
    tenant_slug = models.CharField(_("tenant (slug)"), max_length=63, blank=True)
    # `key:<API key prefix>`, `user:<staff user name>` or `system:<command>`.
    actor = models.CharField(_("actor"), max_length=160)
    # `PATCH /v2/leads/{pk}`, `admin.change leads_app.lead`, `privacy.erasure`, …
    action = models.CharField(_("action"), max_length=160)
    object_id = models.CharField(_("object id"), max_length=200, blank=True)
    request_id = models.CharField(_("request id"), max_length=100, blank=True)
    details = models.JSONField(_("details"), default=dict, blank=True)
    at = models.DateTimeField(_("time"), default=timezone.now)

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name_plural = _("audit entries")
        indexes = [models.Index(fields=["tenant", "-at"], name="audit_tenant_newest")]
        verbose_name = _("audit entry")

    def __str__(self):
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {self.object_id}".rstrip()

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AppendOnly("Audit entries are never changed.")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnly("Audit entries are never deleted by the app.")
