"""Calls, carriers, carrier events, usage counters and idempotency records.

The voice runtime (`/voice/`) is the only writer of calls; the Console API reads them.
"""
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from console.ids import ID_LENGTH, PrefixedId
from console.phone import mask
from console.tenants.querysets import TenantOwnedQuerySet


class Carrier(models.Model):
    """A telephony carrier that posts signed events to `/voice/webhook/<id>`.

    The signing secret is not stored: it is derived on demand as
    HMAC(CARRIER_SIGNING_KEY, id + nonce) (see `calls_app.signing`), so a copy of the
    database alone does not reveal it. Only the random nonce is kept here; issuing a
    new nonce rotates the secret.
    """

    id = models.SlugField(primary_key=True, max_length=64)
    name = models.CharField(max_length=200, blank=True)
    secret_nonce = models.CharField(max_length=64, editable=False)
    # The number shown to the called party when the tenant has no number of its own.
    caller_id = models.CharField("caller id (E.164)", max_length=16, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    secret_rotated_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return self.id


class CallQuerySet(TenantOwnedQuerySet):
    def newest_first(self):
        return self.order_by("-created_at", "-id")

    def with_transcript(self):
        return self.prefetch_related(
            models.Prefetch("transcript_entries", queryset=TranscriptEntry.objects.order_by("ts", "id"))
        )


class Call(models.Model):
    class Direction(models.TextChoices):
        INBOUND = "inbound", pgettext_lazy("choice", "Inbound")
        OUTBOUND = "outbound", pgettext_lazy("choice", "Outbound")

    class Status(models.TextChoices):
        QUEUED = "queued", pgettext_lazy("choice", "Queued")
        ACTIVE = "active", pgettext_lazy("choice", "Active")
        COMPLETED = "completed", pgettext_lazy("choice", "Completed")
        FAILED = "failed", pgettext_lazy("choice", "Failed")
        BUSY = "busy", pgettext_lazy("choice", "Busy")
        NO_ANSWER = "no-answer", pgettext_lazy("choice", "No answer")
        CANCELED = "canceled", pgettext_lazy("choice", "Canceled")

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("cl"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="calls")
    carrier = models.ForeignKey(Carrier, on_delete=models.PROTECT, related_name="calls")
    # The carrier's own id of the call; set by the dial (outbound) or by call.started.
    carrier_call_id = models.CharField(max_length=128, null=True, blank=True)
    direction = models.CharField(max_length=8, choices=Direction.choices)
    from_e164 = models.CharField(max_length=16, blank=True)
    to_e164 = models.CharField(max_length=16)
    status = models.CharField(max_length=16, choices=Status.choices)
    disclosed = models.BooleanField(default=False)
    seconds = models.PositiveIntegerField(default=0)
    # The tenant's audio switches as they stood when the call started; they apply
    # to the whole call and stay visible afterwards.
    recording_enabled = models.BooleanField(default=False)
    transcription_enabled = models.BooleanField(default=True)
    recording_url = models.URLField(max_length=2000, blank=True)
    # Content was removed from the call: its transcript or recording link by a
    # retention period, or (erasure) also the caller's number, replaced by a
    # pseudonym. Duration, direction, status and usage stay. A redacted call takes
    # no more content from late carrier events (calls_app.redaction).
    redacted = models.BooleanField(default=False)
    lead_id = models.CharField(max_length=ID_LENGTH, blank=True)
    # Outbound only: whole minutes reserved against the cap, in the usage period of
    # the request; released by call.ended.
    reserved_minutes = models.PositiveIntegerField(default=0)
    reserved_period = models.CharField(max_length=7, blank=True)
    max_seconds = models.PositiveIntegerField(null=True, blank=True)
    # The usage period (YYYY-MM in the tenant's zone) the call was booked in.
    usage_period = models.CharField(max_length=7, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # Kept by the database, never by this code: triggers change it whenever a line of
    # the call's transcript is written, changed or deleted (migration 0006). 0: the call
    # never had a line. The call list's text cache reads it instead of the lines.
    transcript_version = models.PositiveIntegerField(default=0, db_default=0, editable=False)

    objects = CallQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["carrier", "carrier_call_id"], name="unique_carrier_call"),
        ]
        indexes = [models.Index(fields=["tenant", "-created_at", "-id"], name="call_tenant_newest")]
        verbose_name = _("call")
        verbose_name_plural = _("calls")

    def __str__(self):
        # Masked: this text ends up in admin titles and the admin's change log.
        return f"{self.direction} {mask(self.from_e164) or '?'} → {mask(self.to_e164)} ({self.status})"

    def save(self, **kwargs):
        # A full save of a call read before a line was written would put its old
        # transcript_version back, and the call list would serve the old transcript.
        if not self._state.adding and kwargs.get("update_fields") is None:
            kwargs["update_fields"] = _CALL_FIELDS_SAVED
        super().save(**kwargs)

    @property
    def is_ended(self):
        return self.ended_at is not None


_CALL_FIELDS_SAVED = [field.name for field in Call._meta.concrete_fields
                      if not field.primary_key and field.name != "transcript_version"]


def _refuse_changing_lines():
    raise TypeError("Transcript lines are a record of what was said: never changed once written; "
                    "delete a call's transcript instead.")


class TranscriptEntryQuerySet(models.QuerySet):
    def update(self, **kwargs):
        _refuse_changing_lines()

    def bulk_update(self, objs, fields, batch_size=None):
        _refuse_changing_lines()


class TranscriptEntry(models.Model):
    """A line of a call's transcript: written once, then only read or deleted with the
    rest of the transcript (retention, erasure); changing a line is refused. Every
    write or delete changes its call's `transcript_version` (by trigger)."""

    class Role(models.TextChoices):
        ASSISTANT = "assistant", pgettext_lazy("choice", "Assistant")
        USER = "user", pgettext_lazy("choice", "User")
        SYSTEM = "system", pgettext_lazy("choice", "System")

    call = models.ForeignKey(Call, on_delete=models.CASCADE, related_name="transcript_entries")
    role = models.CharField(max_length=16, choices=Role.choices)
    text = models.TextField()
    ts = models.DateTimeField()

    objects = TranscriptEntryQuerySet.as_manager()

    class Meta:
        ordering = ["ts", "id"]
        verbose_name_plural = "transcript entries"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            _refuse_changing_lines()
        super().save(*args, **kwargs)

    def __str__(self):
        return f"{self.role}: {self.text[:60]}"


class CarrierEvent(models.Model):
    """Every accepted carrier event, by its id: makes the webhook idempotent and keeps
    events that arrive before their call.started until they can be applied."""

    class State(models.TextChoices):
        APPLIED = "applied", "Applied"
        PENDING = "pending", "Pending"

    carrier = models.ForeignKey(Carrier, on_delete=models.CASCADE, related_name="events")
    event_id = models.CharField(max_length=200)
    type = models.CharField(max_length=32)
    carrier_call_id = models.CharField(max_length=128)
    occurred_at = models.DateTimeField()
    data = models.JSONField()
    state = models.CharField(max_length=8, choices=State.choices)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["carrier", "event_id"], name="unique_carrier_event")]
        indexes = [models.Index(fields=["carrier", "carrier_call_id", "state"], name="carrier_event_pending")]

    def __str__(self):
        return f"{self.carrier_id}/{self.event_id} {self.type} ({self.state})"


class UsageCounter(models.Model):
    """Minutes of one tenant in one calendar month (in the tenant's zone).

    Booked by call.ended in the same transaction as the call, so reading usage and
    checking the cap read one row. `recompute_usage` checks it against the calls.
    """

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="usage_counters")
    period = models.CharField(max_length=7)  # YYYY-MM
    minutes = models.PositiveIntegerField(default=0)
    seconds = models.PositiveBigIntegerField(default=0)
    calls = models.PositiveIntegerField(default=0)
    reserved_minutes = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["tenant", "-period"]
        constraints = [models.UniqueConstraint(fields=["tenant", "period"], name="unique_usage_period")]
        verbose_name = _("usage per month")
        verbose_name_plural = _("usage per month")

    def __str__(self):
        return f"{self.tenant_id} {self.period}: {self.minutes} min"


class SimDial(models.Model):
    """What the built-in `sim` carrier was asked to dial (it dials nobody)."""

    call = models.OneToOneField(Call, on_delete=models.CASCADE, related_name="sim_dial")
    carrier_call_id = models.CharField(max_length=128, unique=True)
    from_e164 = models.CharField(max_length=16, blank=True)
    to_e164 = models.CharField(max_length=16)
    max_seconds = models.PositiveIntegerField()
    dialled_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-dialled_at"]
