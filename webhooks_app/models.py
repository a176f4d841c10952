"""Outbound webhooks: a tenant's endpoints, the deliveries of events to them, and
every attempt of every delivery (docs/api.md, "Outbound webhooks")."""
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet

EVENT_TYPES = ("lead.created", "lead.updated", "call.started", "call.ended", "call.analyzed", "usage.threshold",
               "campaign.started", "campaign.paused", "campaign.completed", "campaign.contact.completed")


class Endpoint(models.Model):
    """A URL of the tenant's that receives the events it subscribed to.

    The signing secret is derived, never stored (webhooks_app/signing.py): the row
    keeps a random nonce, and while a rotation is under way also the previous nonce
    and until when it still signs."""

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("wh"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="webhook_endpoints",
                               verbose_name=_("tenant"))
    url = models.URLField(_("URL"), max_length=2000)
    description = models.CharField(_("description"), max_length=200, blank=True, default="")
    event_types = models.JSONField(_("event types"), default=list)
    active = models.BooleanField(_("active"), default=True)
    secret_nonce = models.CharField(_("secret nonce"), max_length=64, editable=False)
    previous_secret_nonce = models.CharField(_("previous secret nonce"), max_length=64, blank=True, default="",
                                             editable=False)
    previous_secret_expires_at = models.DateTimeField(_("previous secret valid until"), null=True, blank=True,
                                                      editable=False)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("last changed"), auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name = _("endpoint")
        verbose_name_plural = _("endpoints")

    def __str__(self):
        return f"{self.url} ({self.tenant_id})"


class Delivery(models.Model):
    """One event for one endpoint. Its row is the truth of whether it still has to be
    sent: a job worker that dies mid-attempt leaves it pending, and the periodic sweep
    sends it again once its lease has run out."""

    class State(models.TextChoices):
        PENDING = "pending", pgettext_lazy("choice", "Pending")
        SUCCEEDED = "succeeded", pgettext_lazy("choice", "Succeeded")
        # The retry window passed without a success: the dead letter.
        DEAD = "dead", pgettext_lazy("choice", "Dead")
        # The payload named a caller whose data the tenant erased (privacy_app): it was
        # rewritten, and a delivery that was still pending is never sent again.
        ERASED = "erased", pgettext_lazy("choice", "Erased")

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("msg"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="webhook_deliveries",
                               verbose_name=_("tenant"))
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries",
                                 verbose_name=_("endpoint"))
    event_type = models.CharField(_("event type"), max_length=40)
    # What makes an event the same event (e.g. `call.ended:<call id>`): a carrier's
    # repeated call.ended is delivered once.
    event_key = models.CharField(_("event key"), max_length=200)
    payload = models.TextField(_("payload"))  # the exact bytes that are signed and sent
    state = models.CharField(_("state"), max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    next_attempt_at = models.DateTimeField(_("next attempt"))
    leased_until = models.DateTimeField(_("held by a worker until"), null=True, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["endpoint", "event_key"], name="webhook_event_once")]
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="webhook_due"),
                   # An endpoint's deliveries newest first: the cursor pages of its list.
                   models.Index(fields=["endpoint", "-created_at", "-id"], name="webhook_endpoint_newest")]
        verbose_name = _("delivery")
        verbose_name_plural = _("deliveries")

    def __str__(self):
        return f"{self.event_type} → {self.endpoint_id} ({self.get_state_display()})"


class Attempt(models.Model):
    class Outcome(models.TextChoices):
        SENDING = "sending", pgettext_lazy("choice", "Sending")
        SUCCEEDED = "succeeded", pgettext_lazy("choice", "Succeeded")
        FAILED = "failed", pgettext_lazy("choice", "Failed")
        # The worker died mid-attempt.
        INTERRUPTED = "interrupted", pgettext_lazy("choice", "Interrupted")

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+", verbose_name=_("tenant"))
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_set",
                                 verbose_name=_("delivery"))
    number = models.PositiveIntegerField(_("number"))
    outcome = models.CharField(_("outcome"), max_length=12, choices=Outcome.choices, default=Outcome.SENDING)
    started_at = models.DateTimeField(_("started"))
    duration_ms = models.PositiveIntegerField(_("duration (ms)"), null=True, blank=True)
    response_status = models.PositiveIntegerField(_("response status"), null=True, blank=True)
    error = models.CharField(_("error"), max_length=300, blank=True, default="")

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="webhook_attempt_number")]
        verbose_name = _("attempt")
        verbose_name_plural = _("attempts")
