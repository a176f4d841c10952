"""The tenant's HTTP tools: what an assistant may call beside its built-in tools
(docs/api.md, "HTTP tools")."""
from django.db import models
from django.utils.translation import gettext_lazy as _

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet


class HttpTool(models.Model):
    """A fixed https URL the assistant may call with arguments that fit `parameters`
    (a JSON Schema); each call is signed like a webhook (Standard Webhooks) with the
    tool's secret, which is derived, never stored (webhooks_app/signing.py): the row
    keeps a nonce, and while a rotation is under way the previous one."""

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("tl"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="http_tools",
                               verbose_name=_("tenant"))
    name = models.CharField(_("name"), max_length=64,
                            help_text=_("What the language model calls the tool: lowercase letters, digits and _."))
    description = models.TextField(
        _("description"), blank=True,
        help_text=_("When and what for the assistant uses the tool (for the language model)."))
    parameters = models.JSONField(_("parameters (JSON Schema)"), default=dict)
    url = models.URLField(_("address (https)"), max_length=2000)
    timeout_ms = models.PositiveIntegerField(_("time limit (milliseconds)"), default=3000)
    secret_nonce = models.CharField(_("secret nonce"), max_length=64, editable=False)
    previous_secret_nonce = models.CharField(_("previous secret nonce"), max_length=64, blank=True, default="",
                                             editable=False)
    previous_secret_expires_at = models.DateTimeField(_("previous secret valid until"), null=True, blank=True,
                                                      editable=False)
    created_at = models.DateTimeField(_("added on"), auto_now_add=True)
    updated_at = models.DateTimeField(_("changed on"), auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="http_tool_name_once")]
        verbose_name = _("HTTP tool")
        verbose_name_plural = _("HTTP tools")

    def __str__(self):
        return self.name
