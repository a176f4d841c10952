"""Retention settings per tenant, exports (access by caller), erasure receipts, and
the erased callers that late carrier events must not bring back."""
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet

# The defaults of a tenant that has not chosen (docs/privacy.md): what a callback
# business needs, not more. None means "kept without limit".
DEFAULT_RETENTION_DAYS = {"transcript_days": 90, "recording_days": 30, "lead_days": 180, "delivery_days": 30}
MAX_RETENTION_DAYS = 36500


def _days_field(verbose_name, help_text, default):
    return models.PositiveIntegerField(
        verbose_name, null=True, blank=True, default=default,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_RETENTION_DAYS)], help_text=help_text,
    )


class RetentionSettings(models.Model):
    """How long the tenant keeps each kind of personal data; applied by `apply_retention`."""

    tenant = models.OneToOneField("tenants.Tenant", on_delete=models.CASCADE, primary_key=True,
                                  related_name="retention_settings", verbose_name=_("tenant"))
    transcript_days = _days_field(
        _("transcripts (days)"), _("Days transcript lines are kept after the call or post; empty: without limit."),
        DEFAULT_RETENTION_DAYS["transcript_days"])
    recording_days = _days_field(
        _("recording links (days)"), _("Days recording links are kept after the call or post; empty: without limit."),
        DEFAULT_RETENTION_DAYS["recording_days"])
    lead_days = _days_field(
        _("leads (days)"), _("Days leads are kept after the call or post; empty: without limit."),
        DEFAULT_RETENTION_DAYS["lead_days"])
    delivery_days = _days_field(
        _("webhook deliveries (days)"),
        _("Days webhook deliveries (with their attempts) are kept after the event; empty: without limit."),
        DEFAULT_RETENTION_DAYS["delivery_days"])
    updated_at = models.DateTimeField(_("last changed"), auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        verbose_name = _("retention settings")
        verbose_name_plural = _("retention settings")

    def __str__(self):
        return gettext("Retention of %(tenant)s") % {"tenant": self.tenant}


class Export(models.Model):
    """Everything the tenant holds about one phone number or one call (Art. 15), as one
    JSON document; deleted 7 days after it was requested, and by an erasure of the
    number or of a call in it."""

    class Status(models.TextChoices):
        PENDING = "pending", pgettext_lazy("choice", "Pending")
        READY = "ready", pgettext_lazy("choice", "Ready")

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("ex"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="privacy_exports",
                               verbose_name=_("tenant"))
    # The export's subject: a number (`phone`, E.164) or one call (`call_id`, e.g. a web
    # call of the voice agent, which has no number).
    phone = models.CharField(_("phone (E.164)"), max_length=16, blank=True)
    call_id = models.CharField(_("call"), max_length=ID_LENGTH, blank=True)
    # The number's pseudonym (empty for a call's export): an erasure finds the exports
    # of a number by it.
    subject = models.CharField(_("caller pseudonym"), max_length=16, db_index=True, blank=True)
    status = models.CharField(_("status"), max_length=8, choices=Status.choices)
    document = models.JSONField(_("document"), null=True, blank=True)
    requested_by = models.CharField(_("requested by"), max_length=160)
    created_at = models.DateTimeField(_("requested"), default=timezone.now)
    ready_at = models.DateTimeField(_("ready"), null=True, blank=True)
    expires_at = models.DateTimeField(_("expires"))

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("export")
        verbose_name_plural = _("exports")

    def __str__(self):
        return self.id


class Erasure(models.Model):
    """The receipt of one erasure (Art. 17): what was removed, counted by kind, and
    when. It names neither the number nor its pseudonym."""

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("er"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="privacy_erasures",
                               verbose_name=_("tenant"))
    counts = models.JSONField(_("removed"))
    requested_by = models.CharField(_("requested by"), max_length=160)
    erased_at = models.DateTimeField(_("erased"), default=timezone.now)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-erased_at", "-id"]
        verbose_name = _("erasure")
        verbose_name_plural = _("erasures")

    def __str__(self):
        return self.id


class ErasedCaller(models.Model):
    """A caller whose data the tenant erased, by pseudonym only: a call.started that
    arrives late for a call made before the erasure is stored redacted. Kept for
    ERASED_CALLER_DAYS (longer than any carrier retries an event)."""

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+", verbose_name=_("tenant"))
    pseudonym = models.CharField(_("caller pseudonym"), max_length=16)
    erased_at = models.DateTimeField(_("erased"))

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "pseudonym"], name="unique_erased_caller")]
        verbose_name = _("erased caller")
        verbose_name_plural = _("erased callers")
