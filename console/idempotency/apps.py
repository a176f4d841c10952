from django.apps import AppConfig


class IdempotencyConfig(AppConfig):
    name = "console.idempotency"
    label = "idempotency"
    verbose_name = "Idempotency keys"
