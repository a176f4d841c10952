"""Outbound campaigns (issue 30): a campaign, its contacts, every dial attempt, and the
tenant's blocklist of numbers that no campaign calls.

The rows are the truth of the dialling: an attempt is claimed (with its call's minute
reservation) in one transaction, and its id is the idempotency key of its one dial
(campaigns_app/scheduler.py); a job worker that dies anywhere leaves rows that the
next tick continues from, never a second dial.
"""
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from console.ids import ID_LENGTH, PrefixedId
from console.phone import mask
from console.tenants.querysets import TenantOwnedQuerySet

MAX_CONTACTS_PER_CAMPAIGN = 50_000


class Outcome(models.TextChoices):
    """What became of a contact (and of each attempt, the first five)."""

    REACHED = "reached", pgettext_lazy("choice", "Reached")
    VOICEMAIL = "voicemail", pgettext_lazy("choice", "Voicemail")
    NO_ANSWER = "no_answer", pgettext_lazy("choice", "No answer")
    BUSY = "busy", pgettext_lazy("choice", "Busy")
    FAILED = "failed", pgettext_lazy("choice", "Failed")
    OPTED_OUT = "opted_out", pgettext_lazy("choice", "Opted out")
    SKIPPED_BLOCKLIST = "skipped_blocklist", pgettext_lazy("choice", "Skipped: blocklist")
    SKIPPED_NO_CONSENT = "skipped_no_consent", pgettext_lazy("choice", "Skipped: no consent")
    # The number's data was erased on the person's request (privacy_app) while the
    # contact was still open: it is never called (docs/privacy.md).
    ERASED = "erased", pgettext_lazy("choice", "Erased on request")


# Outcomes after which a contact is called again (after retryAfterMin, up to maxAttempts).
RETRIED_OUTCOMES = (Outcome.NO_ANSWER, Outcome.BUSY, Outcome.FAILED)


class Campaign(models.Model):
    class Purpose(models.TextChoices):
        # Reminders and callbacks for existing customers.
        SERVICE = "service", pgettext_lazy("choice", "Service")
        # Everything else: needs the consumer's prior express consent (§ 7 Abs. 2 Nr. 1 UWG).
        MARKETING = "marketing", pgettext_lazy("choice", "Marketing")

    class State(models.TextChoices):
        DRAFT = "draft", pgettext_lazy("choice", "Draft")
        RUNNING = "running", pgettext_lazy("choice", "Running")
        PAUSED = "paused", pgettext_lazy("choice", "Paused")
        COMPLETED = "completed", pgettext_lazy("choice", "Completed")
        CANCELED = "canceled", pgettext_lazy("choice", "Canceled")

    class Voicemail(models.TextChoices):
        HANGUP = "hangup", pgettext_lazy("choice", "Hang up")
        LEAVE_MESSAGE = "leave_message", pgettext_lazy("choice", "Leave a message")

    class PausedReason(models.TextChoices):
        OPERATOR = "operator", pgettext_lazy("choice", "Paused by an operator")
        MINUTE_CAP_REACHED = "minute_cap_reached", pgettext_lazy("choice", "Minute cap reached")
        FROM_NUMBER_UNAVAILABLE = "from_number_unavailable", pgettext_lazy("choice", "Caller number unavailable")

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("cp"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="campaigns",
                               verbose_name=_("tenant"))
    name = models.CharField(_("name"), max_length=200)
    assistant = models.ForeignKey("assistants.Assistant", null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="campaigns", verbose_name=_("assistant"))
    # One of the tenant's numbers: the caller id is always shown (never suppressed).
    from_number = models.CharField(_("caller number (E.164)"), max_length=16)
    purpose = models.CharField(_("purpose"), max_length=10, choices=Purpose.choices, default=Purpose.SERVICE)
    # {"mon": {"start": "09:00", "end": "20:00"}, …} in the tenant's zone (campaigns_app/window.py).
    window = models.JSONField(_("calling window"))
    concurrency = models.PositiveSmallIntegerField(
        _("simultaneous calls"), default=1, validators=[MinValueValidator(1)])
    max_attempts = models.PositiveSmallIntegerField(
        _("attempts per contact"), default=3, validators=[MinValueValidator(1), MaxValueValidator(10)])
    retry_after_min = models.PositiveIntegerField(
        _("minutes between attempts"), default=120, validators=[MinValueValidator(5), MaxValueValidator(10080)])
    voicemail = models.CharField(_("on an answering machine"), max_length=16, choices=Voicemail.choices,
                                 default=Voicemail.HANGUP)
    voicemail_touchpoint = models.CharField(_("voicemail message (touchpoint)"), max_length=100, blank=True)
    start_at = models.DateTimeField(_("start at"), null=True, blank=True)
    end_at = models.DateTimeField(_("end at"), null=True, blank=True)
    state = models.CharField(_("state"), max_length=10, choices=State.choices, default=State.DRAFT)
    paused_reason = models.CharField(_("reason of the pause"), max_length=32, choices=PausedReason.choices,
                                     blank=True)
    paused_details = models.JSONField(_("details of the pause"), default=dict, blank=True)
    # How often the campaign paused: the key of each `campaign.paused` webhook.
    pauses = models.PositiveIntegerField(_("pauses"), default=0, editable=False)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("changed"), auto_now=True)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["state"], name="campaign_state"),
                   models.Index(fields=["tenant", "-created_at", "-id"], name="campaign_tenant_newest")]
        verbose_name = _("campaign")
        verbose_name_plural = _("campaigns")

    def __str__(self):
        return self.name

    @property
    def is_finished(self):
        return self.state in (self.State.COMPLETED, self.State.CANCELED)


class ContactQuerySet(TenantOwnedQuerySet):
    def open(self):
        return self.filter(status__in=(CampaignContact.Status.PENDING, CampaignContact.Status.CALLING))


class CampaignContact(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", pgettext_lazy("choice", "Waiting")
        CALLING = "calling", pgettext_lazy("choice", "Calling")
        DONE = "done", pgettext_lazy("choice", "Done")

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("cc"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+",
                               verbose_name=_("tenant"))
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="contacts",
                                 verbose_name=_("campaign"))
    phone = models.CharField(_("phone number (E.164)"), max_length=16)
    name = models.CharField(_("name"), max_length=200, blank=True)
    variables = models.JSONField(_("variables"), default=dict, blank=True)
    b2b = models.BooleanField(_("business contact (B2B)"), default=False)
    # The documented consent (§ 7a UWG): kept five years after it was given and after
    # each use (campaigns_app/retention.py).
    consent_source = models.CharField(_("consent: source"), max_length=200, blank=True)
    consent_at = models.DateTimeField(_("consent: given at"), null=True, blank=True)
    consent_text = models.TextField(_("consent: text"), blank=True)
    # Line of the uploaded file (1 = the header) or position in a JSON upload.
    row = models.PositiveIntegerField(_("row"), null=True, blank=True)
    status = models.CharField(_("status"), max_length=8, choices=Status.choices, default=Status.PENDING)
    outcome = models.CharField(_("outcome"), max_length=20, choices=Outcome.choices, blank=True)
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    # Not called before this moment (its import, or the last attempt + retryAfterMin).
    due_at = models.DateTimeField(_("due"))
    last_attempt_at = models.DateTimeField(_("last attempt"), null=True, blank=True)
    completed_at = models.DateTimeField(_("completed"), null=True, blank=True)
    # Personal data removed at the end of its retention (campaigns_app/retention.py).
    redacted = models.BooleanField(_("redacted"), default=False)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    objects = ContactQuerySet.as_manager()

    class Meta:
        ordering = ["campaign", "created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["campaign", "phone"], condition=Q(redacted=False),
                                               name="campaign_contact_once")]
        indexes = [
            # The scheduler's one read per tick: the due contacts of a campaign, oldest due first.
            models.Index(fields=["campaign", "status", "due_at", "id"], name="campaign_contact_due"),
            models.Index(fields=["campaign", "outcome"], name="campaign_contact_outcome"),
            models.Index(fields=["tenant", "phone"], name="campaign_contact_phone"),
        ]
        verbose_name = _("contact")
        verbose_name_plural = _("contacts")

    def __str__(self):
        return mask(self.phone) or "—"


class CampaignAttempt(models.Model):
    """One dial of one contact. Its id is the idempotency key that travels with the
    carrier's request: claimed once (unique per contact and number), dialled once."""

    class State(models.TextChoices):
        CLAIMED = "claimed", pgettext_lazy("choice", "Claimed")  # the call is reserved, not yet dialled
        DIALING = "dialing", pgettext_lazy("choice", "Dialling")  # the carrier was asked (answer unknown)
        DIALLED = "dialled", pgettext_lazy("choice", "Dialled")  # the carrier took the call
        ENDED = "ended", pgettext_lazy("choice", "Ended")

    IN_FLIGHT = (State.CLAIMED, State.DIALING, State.DIALLED)

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("at"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+",
                               verbose_name=_("tenant"))
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="attempts",
                                 verbose_name=_("campaign"))
    contact = models.ForeignKey(CampaignContact, on_delete=models.CASCADE, related_name="attempt_set",
                                verbose_name=_("contact"))
    number = models.PositiveSmallIntegerField(_("attempt"))
    call = models.ForeignKey("calls_app.Call", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                             verbose_name=_("call"))
    state = models.CharField(_("state"), max_length=8, choices=State.choices, default=State.CLAIMED)
    outcome = models.CharField(_("outcome"), max_length=20, choices=Outcome.choices, blank=True)
    # The carrier's answering-machine verdict (human, machine_start, machine_end_beep, fax, unknown).
    answered_by = models.CharField(_("answered by"), max_length=32, blank=True)
    # How often the dial request was sent: 1, more only as an idempotent resend after
    # the carrier's answer was lost (the carrier placed at most one call for the key).
    dials = models.PositiveSmallIntegerField(_("dial requests"), default=0)
    claimed_at = models.DateTimeField(_("claimed"))
    dial_started_at = models.DateTimeField(_("dial sent"), null=True, blank=True)
    dialled_at = models.DateTimeField(_("dialled"), null=True, blank=True)
    ended_at = models.DateTimeField(_("ended"), null=True, blank=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["contact", "number"]
        constraints = [models.UniqueConstraint(fields=["contact", "number"], name="campaign_attempt_once")]
        indexes = [models.Index(fields=["campaign", "state"], name="campaign_attempt_state"),
                   models.Index(fields=["state", "claimed_at"], name="campaign_attempt_open")]
        verbose_name = _("attempt")
        verbose_name_plural = _("attempts")

    def __str__(self):
        return f"{self.contact} #{self.number} ({self.state})"


class BlockedNumber(models.Model):
    """A number that no campaign of the tenant calls: the callee asked for no more
    calls (`opt_out`), or the tenant put it here.

    An erasure of the number (privacy_app) keeps the entry, because it is what makes
    the objection last, but not the number: `phone` becomes the tenant's pseudonym of
    it (`console.pseudonyms`, a keyed hash) and `erased_at` is set; the blocklist is
    matched by number and by pseudonym (campaigns_app.selectors.blocked_among)."""

    class Reason(models.TextChoices):
        OPT_OUT = "opt_out", pgettext_lazy("choice", "Asked for no more calls")
        MANUAL = "manual", pgettext_lazy("choice", "Added by the tenant")

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("bl"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="blocked_numbers",
                               verbose_name=_("tenant"))
    # E.164, or the pseudonym of the number once it was erased (`erased_at`).
    phone = models.CharField(_("phone number (E.164)"), max_length=16)
    reason = models.CharField(_("reason"), max_length=10, choices=Reason.choices, default=Reason.MANUAL)
    note = models.CharField(_("note"), max_length=200, blank=True)
    # The call in which the callee opted out, if it was one.
    call_id = models.CharField(_("call"), max_length=ID_LENGTH, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    # When the number's data was erased: `phone` holds its pseudonym since, `note` is empty.
    erased_at = models.DateTimeField(_("number erased"), null=True, blank=True, editable=False)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["tenant", "phone"], name="blocked_number_once")]
        verbose_name = _("blocked number")
        verbose_name_plural = _("blocklist")

    def __str__(self):
        return mask(self.phone)
