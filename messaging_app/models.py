"""The tenant's messaging provider and every SMS it sent or will send (issue 37 §4,
docs/api.md "SMS")."""
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet


class MessagingSettings(models.Model):
    """How the tenant's SMS are sent: `carrier` (the default: each call's own carrier,
    where its kind sends SMS — calls_app.kinds, `CarrierKind.sms` —, from the tenant's
    number the caller called), `sipgate` (its SMS API with a personal access token),
    `twilio` (the Messages API of one chosen Twilio carrier, from one of the tenant's
    numbers), `webhook` (the tenant's own HTTPS endpoint, signed by the Standard
    Webhooks scheme like our webhooks: the secret is derived, never stored,
    webhooks_app/signing.py) or `""` (no SMS, only when chosen). The sipgate token is
    kept sealed (calls_app.signing).

    `carrier` is the default of a tenant without settings and of a new row; rows saved
    before it came keep their `""`: a tenant that chose "no SMS" cannot be told from one
    that only changed its templates, and nobody's choice is turned into SMS sent
    (docs/api.md, "SMS")."""

    class Provider(models.TextChoices):
        NONE = "", pgettext_lazy("choice", "None (no SMS)")
        CARRIER = "carrier", pgettext_lazy("choice", "The call's own carrier (where it can send SMS: Twilio)")
        SIPGATE = "sipgate", "sipgate"
        TWILIO = "twilio", "Twilio"
        WEBHOOK = "webhook", pgettext_lazy("choice", "Own endpoint (webhook)")

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("ms"), editable=False)
    tenant = models.OneToOneField("tenants.Tenant", on_delete=models.CASCADE, related_name="messaging_settings",
                                  verbose_name=_("tenant"))
    provider = models.CharField(_("provider"), max_length=16, choices=Provider.choices, blank=True,
                                default=Provider.CARRIER)
    # sipgate: the token's id (token-…) and the SMS extension (s0, s1 …); the token sealed.
    sipgate_token_id = models.CharField(_("sipgate token id"), max_length=100, blank=True, default="")
    sipgate_token_sealed = models.TextField(_("sealed sipgate token"), blank=True, default="", editable=False)
    sipgate_sms_id = models.CharField(_("sipgate SMS extension"), max_length=20, blank=True, default="")
    # twilio: the carrier whose account sends, and the sender (one of the tenant's numbers).
    twilio_carrier = models.ForeignKey("calls_app.Carrier", on_delete=models.PROTECT, null=True, blank=True,
                                       related_name="+", verbose_name=_("Twilio carrier"))
    sender_e164 = models.CharField(_("sender number (E.164)"), max_length=16, blank=True, default="")
    # webhook: the tenant's endpoint; its signing secret is derived from the nonce.
    webhook_url = models.URLField(_("webhook URL"), max_length=2000, blank=True, default="")
    secret_nonce = models.CharField(_("secret nonce"), max_length=64, blank=True, default="", editable=False)
    previous_secret_nonce = models.CharField(_("previous secret nonce"), max_length=64, blank=True, default="",
                                             editable=False)
    previous_secret_expires_at = models.DateTimeField(_("previous secret valid until"), null=True, blank=True,
                                                      editable=False)
    # The texts, German, with {variables}: the confirmation of a booking and its reminder.
    templates = models.JSONField(_("templates"), default=dict, blank=True)
    updated_at = models.DateTimeField(_("last changed"), auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        verbose_name = _("messaging settings")
        verbose_name_plural = _("messaging settings")

    def __str__(self) -> str:
        return f"{self.tenant_id}: {self.provider or '-'}"


class Sms(models.Model):
    """One SMS to a caller: queued (now, or at `send_at`: a reminder), then sent or
    failed once. `key` makes a retry of the same request the same SMS."""

    class Status(models.TextChoices):
        QUEUED = "queued", pgettext_lazy("choice", "Queued")
        SENDING = "sending", pgettext_lazy("choice", "Sending")
        SENT = "sent", pgettext_lazy("choice", "Sent")
        FAILED = "failed", pgettext_lazy("choice", "Failed")
        # Not sent: the number was blocked meanwhile, or the SMS was cancelled (a booking moved).
        CANCELLED = "cancelled", pgettext_lazy("choice", "Cancelled")

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("sms"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="sms",
                               verbose_name=_("tenant"))
    key = models.CharField(_("idempotency key"), max_length=200)
    call_id = models.CharField(_("call"), max_length=ID_LENGTH, blank=True, default="")
    to_e164 = models.CharField(_("recipient (E.164)"), max_length=16)
    template = models.CharField(_("template"), max_length=40)
    text = models.TextField(_("text"))
    provider = models.CharField(_("provider"), max_length=16, blank=True, default="")
    provider_id = models.CharField(_("provider's id"), max_length=200, blank=True, default="")
    status = models.CharField(_("status"), max_length=10, choices=Status.choices, default=Status.QUEUED)
    error = models.CharField(_("error"), max_length=300, blank=True, default="")
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    send_at = models.DateTimeField(_("send at"))
    sent_at = models.DateTimeField(_("sent"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("SMS")
        verbose_name_plural = _("SMS")
        constraints = [models.UniqueConstraint(fields=["tenant", "key"], name="unique_sms_key")]
        indexes = [models.Index(fields=["status", "send_at"], name="sms_due"),
                   models.Index(fields=["tenant", "to_e164"], name="sms_recipient"),
                   models.Index(fields=["tenant", "created_at"], name="sms_tenant_day")]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"
