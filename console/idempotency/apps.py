from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class IdempotencyConfig(AppConfig):
    name = "console.idempotency"
    label = "idempotency"
    verbose_name = _("Idempotency keys")
