from django.db import models
from django.utils.translation import gettext_lazy as _

from console.tenants.querysets import TenantOwnedQuerySet

MAX_TEXT_LENGTH = 5000


class ScriptOverride(models.Model):
    """A tenant's own text for a touchpoint of the catalog; without one the
    catalog's default text applies (spec: Script states)."""

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="script_overrides",
                               verbose_name=_("tenant"))
    # An id of scripts_app/catalog.json; checked by the services and the admin form,
    # not by choices, so that editing the catalog needs no migration.
    touchpoint_id = models.CharField(_("touchpoint"), max_length=100)
    text = models.TextField(_("text"), max_length=MAX_TEXT_LENGTH)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("last changed"), auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["tenant_id", "touchpoint_id"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "touchpoint_id"], name="scripts_one_override_per_touchpoint"),
        ]
        verbose_name = _("script override")
        verbose_name_plural = _("script overrides")

    def __str__(self):
        return self.touchpoint_id
