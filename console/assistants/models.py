from django.db import models

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet


class Assistant(models.Model):
    """A configured voice assistant of a tenant (what answers a phone number)."""

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("as"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="assistants")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    language = models.CharField(max_length=8, default="de", help_text="BCP 47 language of the conversation.")
    voice = models.CharField(max_length=64, blank=True, help_text="TTS voice; empty for the engine's default.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["tenant", "name"])]

    def __str__(self):
        return self.name
