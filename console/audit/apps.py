"""The audit trail: who changed what, through the API, the admin and the commands."""
from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "console.audit"
    label = "audit"
    verbose_name = "Audit trail"
