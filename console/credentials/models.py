from django.conf import settings
from django.db import models
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet


class ApiKeyQuerySet(TenantOwnedQuerySet):
    def active(self):
        return self.filter(revoked_at__isnull=True)


class ApiKey(models.Model):
    """A tenant's API key. Only its SHA-256 is stored; the key is shown once.

    The key is `swk_<prefix>_<secret>`: the prefix finds the row (and lets people
    tell keys apart), the hash of the whole key proves possession. A key carries
    256 random bits, so a fast hash is enough; a slow password hash would only cost
    time on every request.
    """

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("key"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="api_keys",
                               verbose_name=_("tenant"))
    name = models.CharField(_("name"), max_length=100, blank=True)
    prefix = models.CharField(_("prefix"), max_length=32, unique=True, editable=False)
    key_hash = models.CharField(_("key hash"), max_length=64, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, editable=False,
        verbose_name=_("created by")
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True, editable=False)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("API key")
        verbose_name_plural = _("API keys")

    def __str__(self):
        return f"{self.prefix}… ({self.name or gettext('unnamed')})"

    @property
    def is_active(self):
        return self.revoked_at is None
