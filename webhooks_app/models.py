"""Outbound webhooks: a tenant's endpoints, the deliveries of events to them, and
every attempt of every delivery (docs/api.md, "Outbound webhooks")."""
from django.db import models

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet

EVENT_TYPES = ("lead.created", "lead.updated", "call.started", "call.ended", "call.analyzed", "usage.threshold")


class Endpoint(models.Model):
    """A URL of the tenant's that receives the events it subscribed to.

    The signing secret is derived, never stored (webhooks_app/signing.py): the row
    keeps a random nonce, and while a rotation is under way also the previous nonce
    and until when it still signs."""

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("wh"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=200, blank=True, default="")
    event_types = models.JSONField(default=list)
    active = models.BooleanField(default=True)
    secret_nonce = models.CharField(max_length=64, editable=False)
    previous_secret_nonce = models.CharField(max_length=64, blank=True, default="", editable=False)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self):
        return f"{self.url} ({self.tenant_id})"


class Delivery(models.Model):
    """One event for one endpoint. Its row is the truth of whether it still has to be
    sent: a job worker that dies mid-attempt leaves it pending, and the periodic sweep
    sends it again once its lease has run out."""

    class State(models.TextChoices):
        PENDING = "pending"
        SUCCEEDED = "succeeded"
        DEAD = "dead"  # the retry window passed without a success: the dead letter

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("msg"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="webhook_deliveries")
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries")
    event_type = models.CharField(max_length=40)
    # What makes an event the same event (e.g. `call.ended:<call id>`): a carrier's
    # repeated call.ended is delivered once.
    event_key = models.CharField(max_length=200)
    payload = models.TextField()  # the exact bytes that are signed and sent
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    leased_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["endpoint", "event_key"], name="webhook_event_once")]
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="webhook_due"),
                   # An endpoint's deliveries newest first: the cursor pages of its list.
                   models.Index(fields=["endpoint", "-created_at", "-id"], name="webhook_endpoint_newest")]

    def __str__(self):
        return f"{self.event_type} → {self.endpoint_id} ({self.state})"


class Attempt(models.Model):
    class Outcome(models.TextChoices):
        SENDING = "sending"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        INTERRUPTED = "interrupted"  # the worker died mid-attempt

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+")
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_set")
    number = models.PositiveIntegerField()
    outcome = models.CharField(max_length=12, choices=Outcome.choices, default=Outcome.SENDING)
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=300, blank=True, default="")

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="webhook_attempt_number")]
