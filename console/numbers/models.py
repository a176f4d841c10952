from django.db import models
from django.utils.translation import gettext_lazy as _

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet


class PhoneNumber(models.Model):
    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("pn"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="phone_numbers",
                               verbose_name=_("tenant"))
    # Unique across all tenants: an inbound call finds its tenant by the number it called.
    e164 = models.CharField(_("number (E.164)"), max_length=16, unique=True)
    label = models.CharField(_("label"), max_length=100, blank=True)
    # A number keeps pointing at its assistant: deleting an assistant that numbers
    # answer with is refused (409 assistant_in_use), by the database too (RESTRICT; a
    # tenant's deletion still takes both).
    assistant = models.ForeignKey(
        "assistants.Assistant", null=True, blank=True, on_delete=models.RESTRICT, related_name="phone_numbers",
        verbose_name=_("assistant")
    )
    # The assistant's published version the number answers with; null: its latest
    # (console.assistants.selectors.assistant_answering). Cleared with a new assistant.
    assistant_version = models.PositiveIntegerField(_("pinned version"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["e164"]
        verbose_name = _("phone number")
        verbose_name_plural = _("phone numbers")

    def __str__(self):
        return self.e164
