from django.db import models
from django.utils.translation import gettext_lazy as _


class IdempotencyRecord(models.Model):
    """The first response to a request with an `Idempotency-Key` (see services.py)."""

    scope = models.CharField(_("scope"), max_length=200)
    key = models.CharField(_("key"), max_length=255)
    request_hash = models.CharField(_("request hash"), max_length=64)
    # Null while the first request is still being handled.
    status_code = models.PositiveSmallIntegerField(_("status code"), null=True)
    body = models.JSONField(_("response body"), null=True)
    created_at = models.DateTimeField(_("created"))

    class Meta:
        # The table was created by calls_app, where the model lived first; the core
        # took it over with its rows (a state-only migration), so the name stays.
        db_table = "calls_app_idempotencyrecord"
        constraints = [models.UniqueConstraint(fields=["scope", "key"], name="unique_idempotency_key")]
        indexes = [models.Index(fields=["created_at"], name="idempotency_created")]
        verbose_name = _("idempotency record")
        verbose_name_plural = _("idempotency records")
