"""The tenant's HTTP tools: what an assistant may call beside its built-in tools
(docs/api.md, "HTTP tools")."""
from django.db import models

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet


class HttpTool(models.Model):
    """A fixed https URL the assistant may call with arguments that fit `parameters`
    (a JSON Schema); each call is signed like a webhook (Standard Webhooks) with the
    tool's secret, which is derived, never stored (webhooks_app/signing.py): the row
    keeps a nonce, and while a rotation is under way the previous one."""

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("tl"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="http_tools",
                               verbose_name="Mandant")
    name = models.CharField("Name", max_length=64,
                            help_text="So nennt das Sprachmodell das Werkzeug: Kleinbuchstaben, Ziffern und _.")
    description = models.TextField("Beschreibung", blank=True,
                                   help_text="Wann und wofür die Assistenz das Werkzeug nutzt (für das Sprachmodell).")
    parameters = models.JSONField("Parameter (JSON Schema)", default=dict)
    url = models.URLField("Adresse (https)", max_length=2000)
    timeout_ms = models.PositiveIntegerField("Zeitlimit (Millisekunden)", default=3000)
    secret_nonce = models.CharField(max_length=64, editable=False)
    previous_secret_nonce = models.CharField(max_length=64, blank=True, default="", editable=False)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField("Angelegt am", auto_now_add=True)
    updated_at = models.DateTimeField("Geändert am", auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="http_tool_name_once")]
        verbose_name = "HTTP-Werkzeug"
        verbose_name_plural = "HTTP-Werkzeuge"

    def __str__(self):
        return self.name
