"""The audit trail: who changed what, through the API, the admin and the commands."""
from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AuditConfig(AppConfig):
    name = "console.audit"
    label = "audit"
    verbose_name = _("Audit trail")
