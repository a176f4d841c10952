from django.db import models
from django.utils.translation import gettext_lazy as _

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet


class Assistant(models.Model):
    """A configured voice assistant of a tenant (what answers a phone number)."""

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("as"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="assistants",
                               verbose_name=_("tenant"))
    name = models.CharField(_("name"), max_length=200)
    description = models.TextField(_("description"), blank=True)
    language = models.CharField(_("language"), max_length=8, default="de",
                                help_text=_("BCP 47 language of the conversation."))
    voice = models.CharField(_("voice"), max_length=64, blank=True,
                             help_text=_("TTS voice; empty for the engine's default."))
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("last changed"), auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["tenant", "name"])]
        verbose_name = _("assistant")
        verbose_name_plural = _("assistants")

    def __str__(self):
        return self.name
