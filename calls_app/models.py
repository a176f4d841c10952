"""Calls, carriers, carrier events, usage counters and idempotency records.

The voice runtime (`/voice/`) is the only writer of calls; the Console API reads them.
"""
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from console.ids import ID_LENGTH, PrefixedId
from console.phone import mask
from console.tenants.querysets import TenantOwnedQuerySet


def known_carrier_kind(value: str) -> None:
    """A carrier's kind is one of the registry's (calls_app/kinds): a new kind needs no migration."""
    from calls_app.kinds import KINDS

    if value not in KINDS:
        raise ValidationError(_("Unknown kind: %(value)s (known: %(kinds)s)."),
                              params={"value": value, "kinds": ", ".join(KINDS)})


class Carrier(models.Model):
    """A telephony carrier, of one of the kinds of calls_app/kinds (docs/telephony.md):
    `signed-webhook` (posts signed events to `/voice/webhook/<id>`, CONTRACT §5),
    `twilio` (Media Streams and a REST API), `asterisk` (AudioSocket), …

    The signing secret (signed-webhook, asterisk) is not stored: it is derived on demand
    as HMAC(CARRIER_SIGNING_KEY, id + nonce) (see `calls_app.signing`), so a copy of the
    database alone does not reveal it. Only the random nonce is kept here; issuing a
    new nonce rotates the secret. Credentials that are the carrier's own (a Twilio
    account's SID and auth token) cannot be derived: the fields its kind declares are
    kept as one JSON object sealed (Fernet, with a key derived from the same signing
    key), never shown again (calls_app/kinds/credentials.py).
    """

    id = models.SlugField(primary_key=True, max_length=64)
    name = models.CharField(_("name"), max_length=200, blank=True)
    kind = models.CharField(_("kind"), max_length=32, default="signed-webhook", validators=[known_carrier_kind])
    secret_nonce = models.CharField(_("secret nonce"), max_length=64, editable=False)
    credentials_sealed = models.TextField(_("sealed credentials"), blank=True, editable=False)
    # The number shown to the called party when the tenant has no number of its own.
    caller_id = models.CharField(_("caller id (E.164)"), max_length=16, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    secret_rotated_at = models.DateTimeField(_("secret renewed"), null=True, blank=True, editable=False)

    class Meta:
        ordering = ["id"]
        verbose_name = _("carrier")
        verbose_name_plural = _("carriers")

    def __str__(self):
        return self.id


class SipRegistration(models.Model):
    """What the SIP agent (agent_app/sip, its own process) last knew of a `sip`
    carrier's registration: `registered`, `registering`, `failing` (with the trunk's
    last answer as `reason`, e.g. "403 Forbidden") or `static` (a trunk that needs
    none). /health and the admin show it; the agent writes it."""

    carrier = models.OneToOneField(Carrier, on_delete=models.CASCADE, primary_key=True, related_name="sip_registration",
                                   verbose_name=_("carrier"))
    state = models.CharField(_("state"), max_length=16)
    reason = models.CharField(_("last reason"), max_length=200, blank=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("SIP registration")
        verbose_name_plural = _("SIP registrations")

    def __str__(self):
        return f"{self.carrier_id}: {self.state}"


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
        # A phone call refused at once (the tenant's minute cap): 0 seconds.
        REJECTED = "rejected", pgettext_lazy("choice", "Rejected")

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("cl"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="calls",
                               verbose_name=_("tenant"))
    carrier = models.ForeignKey(Carrier, on_delete=models.PROTECT, related_name="calls", verbose_name=_("carrier"))
    # The carrier's own id of the call; set by the dial (outbound) or by call.started.
    carrier_call_id = models.CharField(_("carrier's call id"), max_length=128, null=True, blank=True)
    direction = models.CharField(_("direction"), max_length=8, choices=Direction.choices)
    from_e164 = models.CharField(_("from"), max_length=16, blank=True)
    to_e164 = models.CharField(_("to"), max_length=16)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices)
    disclosed = models.BooleanField(_("AI disclosed"), default=False)
    # The caller heard that the call is recorded (the disclosure's recording notice, § 201 StGB).
    recording_announced = models.BooleanField(_("recording announced"), default=False)
    # A conversation of the admin's "Im Browser testen": booked against no cap, marked in lists.
    is_test = models.BooleanField(_("test call"), default=False)
    seconds = models.PositiveIntegerField(_("seconds"), default=0)
    # The tenant's audio switches as they stood when the call started; they apply
    # to the whole call and stay visible afterwards.
    recording_enabled = models.BooleanField(_("recording on"), default=False)
    transcription_enabled = models.BooleanField(_("transcription on"), default=True)
    recording_url = models.URLField(_("recording URL"), max_length=2000, blank=True)
    # The size of our stored recording (calls_app.recordings): the tenant's recordings
    # together stay within TENANT_MAX_RECORDING_BYTES.
    recording_bytes = models.PositiveBigIntegerField(_("recording size (bytes)"), default=0)
    # Content was removed from the call: its transcript or recording link by a
    # retention period, or (erasure) also the caller's number, replaced by a
    # pseudonym. Duration, direction, status and usage stay. A redacted call takes
    # no more content from late carrier events (calls_app.redaction).
    redacted = models.BooleanField(_("redacted"), default=False)
    lead_id = models.CharField(_("lead id"), max_length=ID_LENGTH, blank=True)
    # The assistant that answered: an inbound call's number's, a voice agent session's.
    # Its analysis settings apply after the call (calls_app.analysis). Nullable
    # columns, added in place (SQLite does not remake the table, whose triggers stay).
    assistant = models.ForeignKey("assistants.Assistant", null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="calls", verbose_name=_("answering assistant"))
    # The published version of the assistant the call ran with (console.assistants
    # .selectors.assistant_answering: the number's pin, else the latest); null: its
    # draft (an assistant never published), or no assistant.
    assistant_version = models.PositiveIntegerField(_("assistant version"), null=True, blank=True, editable=False)
    # What the assistant did through its built-in tools, in order: [{"tool", "at",
    # "target"?}] (`call_tool_action_record`); names and times only, no caller's data.
    # Null: nothing. The analysis reads its outcome from it.
    assistant_actions = models.JSONField(_("assistant's actions"), null=True, blank=True, editable=False)
    # A phone call the agent handed over to a person: the number it was put through to
    # (the call's seconds are those up to the transfer).
    transferred_to = models.CharField(_("transferred to"), max_length=16, blank=True)
    # Outbound only: whole minutes reserved against the cap, in the usage period of
    # the request; released by call.ended.
    reserved_minutes = models.PositiveIntegerField(_("reserved minutes"), default=0)
    reserved_period = models.CharField(_("reserved in month"), max_length=7, blank=True)
    max_seconds = models.PositiveIntegerField(_("longest duration (seconds)"), null=True, blank=True)
    # The usage period (YYYY-MM in the tenant's zone) the call was booked in.
    usage_period = models.CharField(_("booked in month"), max_length=7, blank=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    ended_at = models.DateTimeField(_("ended"), null=True, blank=True)
    # Calls whose conversation a process of ours holds (the voice agent's WebSocket):
    # the last moment its owner said it still holds it (`call_heartbeat`, every
    # CALL_HEARTBEAT_SEC). A call under way whose heartbeat is older than
    # CALL_HEARTBEAT_TIMEOUT_SEC lost its owner (a killed server) and is booked up to
    # this moment by the sweep (`calls_orphaned_end`). Null: a carrier holds the call.
    heartbeat_at = models.DateTimeField(_("last heartbeat"), null=True, blank=True, editable=False)
    # Kept by the database, never by this code: triggers change it whenever a line of
    # the call's transcript is written, changed or deleted (migration 0006). 0: the call
    # never had a line. The call list's text cache reads it instead of the lines.
    transcript_version = models.PositiveIntegerField(_("transcript version"), default=0, db_default=0, editable=False)

    objects = CallQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["carrier", "carrier_call_id"], name="unique_carrier_call"),
        ]
        indexes = [
            models.Index(fields=["tenant", "-created_at", "-id"], name="call_tenant_newest"),
            # The sweep's read: only the calls under way that have an owner.
            models.Index(fields=["heartbeat_at"], name="call_owned_under_way",
                         condition=models.Q(ended_at__isnull=True, heartbeat_at__isnull=False)),
        ]
        verbose_name = _("call")
        verbose_name_plural = _("calls")

    def __str__(self):
        # Masked: this text ends up in admin titles and the admin's change log.
        return (f"{self.get_direction_display()} {mask(self.from_e164) or '?'} → {mask(self.to_e164)} "
                f"({self.get_status_display()})")

    def save(self, **kwargs):
        # A full save of a call read before a line was written would put its old
        # transcript_version back, and the call list would serve the old transcript.
        if not self._state.adding and kwargs.get("update_fields") is None:
            kwargs["update_fields"] = _CALL_FIELDS_SAVED
        super().save(**kwargs)

    @property
    def is_ended(self):
        return self.ended_at is not None


# Neither the database's transcript_version nor the owner's heartbeat: a full save of
# a call read a while ago would put back an old one of either.
_CALL_FIELDS_SAVED = [field.name for field in Call._meta.concrete_fields
                      if not field.primary_key and field.name not in ("transcript_version", "heartbeat_at")]


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

    call = models.ForeignKey(Call, on_delete=models.CASCADE, related_name="transcript_entries", verbose_name=_("call"))
    role = models.CharField(_("speaker"), max_length=16, choices=Role.choices)
    text = models.TextField(_("text"))
    ts = models.DateTimeField(_("time"))

    objects = TranscriptEntryQuerySet.as_manager()

    class Meta:
        ordering = ["ts", "id"]
        verbose_name = _("transcript line")
        verbose_name_plural = _("transcript lines")

    def save(self, *args, **kwargs):
        if not self._state.adding:
            _refuse_changing_lines()
        super().save(*args, **kwargs)

    def __str__(self):
        return f"{self.get_role_display()}: {self.text[:60]}"


class TurnLatency(models.Model):
    """How long one reply of the voice agent took: from the end of the caller's speech to
    the reply's first audio (`total_ms`), and the stages that add up to it — waiting for
    the end of the turn, recognition (what was left of it once the end was decided),
    thinking and synthesis. Written once per reply by the agent; no words, no numbers:
    only durations."""

    call = models.ForeignKey(Call, on_delete=models.CASCADE, related_name="turn_latencies", verbose_name=_("call"))
    measured_at = models.DateTimeField(_("measured"), auto_now_add=True)
    total_ms = models.PositiveIntegerField(_("reply latency (ms)"))
    end_of_turn_ms = models.PositiveIntegerField(_("end-of-turn wait (ms)"))
    recognition_ms = models.PositiveIntegerField(_("recognition (ms)"))
    thinking_ms = models.PositiveIntegerField(_("thinking (ms)"))
    synthesis_ms = models.PositiveIntegerField(_("synthesis (ms)"))

    class Meta:
        ordering = ["measured_at", "id"]
        verbose_name = _("reply latency")
        verbose_name_plural = _("reply latencies")

    def __str__(self):
        return f"{self.total_ms} ms"


class CarrierEvent(models.Model):
    """Every accepted carrier event, by its id: makes the webhook idempotent and keeps
    events that arrive before their call.started until they can be applied."""

    class State(models.TextChoices):
        APPLIED = "applied", pgettext_lazy("choice", "Applied")
        PENDING = "pending", pgettext_lazy("choice", "Pending")

    carrier = models.ForeignKey(Carrier, on_delete=models.CASCADE, related_name="events", verbose_name=_("carrier"))
    event_id = models.CharField(_("event id"), max_length=200)
    type = models.CharField(_("type"), max_length=32)
    carrier_call_id = models.CharField(_("carrier's call id"), max_length=128)
    occurred_at = models.DateTimeField(_("occurred"))
    data = models.JSONField(_("data"))
    state = models.CharField(_("state"), max_length=8, choices=State.choices)
    received_at = models.DateTimeField(_("received"), auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["carrier", "event_id"], name="unique_carrier_event")]
        indexes = [models.Index(fields=["carrier", "carrier_call_id", "state"], name="carrier_event_pending")]
        verbose_name = _("carrier event")
        verbose_name_plural = _("carrier events")

    def __str__(self):
        return f"{self.carrier_id}/{self.event_id} {self.type} ({self.get_state_display()})"


class UsageCounter(models.Model):
    """Minutes of one tenant in one calendar month (in the tenant's zone).

    Booked by call.ended in the same transaction as the call, so reading usage and
    checking the cap read one row. `recompute_usage` checks it against the calls.
    """

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="usage_counters",
                               verbose_name=_("tenant"))
    period = models.CharField(_("month"), max_length=7)  # YYYY-MM
    minutes = models.PositiveIntegerField(_("minutes"), default=0)
    seconds = models.PositiveBigIntegerField(_("seconds"), default=0)
    calls = models.PositiveIntegerField(_("calls"), default=0)
    reserved_minutes = models.PositiveIntegerField(_("reserved minutes"), default=0)
    updated_at = models.DateTimeField(_("last changed"), auto_now=True)

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

    call = models.OneToOneField(Call, on_delete=models.CASCADE, related_name="sim_dial", verbose_name=_("call"))
    carrier_call_id = models.CharField(_("carrier's call id"), max_length=128, unique=True)
    from_e164 = models.CharField(_("from"), max_length=16, blank=True)
    to_e164 = models.CharField(_("to"), max_length=16)
    max_seconds = models.PositiveIntegerField(_("longest duration (seconds)"))
    dialled_at = models.DateTimeField(_("dialled"), auto_now_add=True)

    class Meta:
        ordering = ["-dialled_at"]
        verbose_name = _("simulated dial")
        verbose_name_plural = _("simulated dials")


class WarmTransfer(models.Model):
    """A warm hand-over of a call (transfer_call's mode "warm"): the person at `target`
    is rung (`leg_id`: the carrier's id of that second call) while the caller waits with
    the agent; when the person answers, the carrier asks for what to say
    (`summary`, emptied once said) and the caller is joined after it; nobody answering
    within VOICE_WARM_TRANSFER_RING_SEC, it is `not_answered`."""

    class Status(models.TextChoices):
        RINGING = "ringing", pgettext_lazy("warm transfer", "Ringing")
        ANSWERED = "answered", pgettext_lazy("warm transfer", "Answered")
        NOT_ANSWERED = "not_answered", pgettext_lazy("warm transfer", "Not answered")

    call = models.ForeignKey(Call, on_delete=models.CASCADE, related_name="warm_transfers", verbose_name=_("call"))
    target = models.CharField(_("target"), max_length=16)
    leg_id = models.CharField(_("carrier's id of the call to the target"), max_length=128, blank=True)
    summary = models.TextField(_("summary"), blank=True)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.RINGING)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    decided_at = models.DateTimeField(_("decided"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("warm transfer")
        verbose_name_plural = _("warm transfers")


class CallAnalysis(models.Model):
    """What was written about a call after it ended (calls_app.analysis): a German
    summary, the structured data the assistant's schema asks for (checked against it:
    data that does not fit is kept as invalid with the reasons, never as valid),
    whether the call met the success criteria, and outcome tags. Written once per call
    by a background job; `engine` says whether a language model or the offline policy
    wrote it."""

    class Engine(models.TextChoices):
        LLM = "llm", pgettext_lazy("choice", "Language model")
        POLICY = "policy", pgettext_lazy("choice", "Rule set (offline)")

    call = models.OneToOneField(Call, on_delete=models.CASCADE, primary_key=True, related_name="analysis",
                                verbose_name=_("call"))
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+", verbose_name=_("tenant"))
    summary = models.TextField(_("summary"), blank=True)
    structured = models.JSONField(_("structured data"), null=True, blank=True)
    # None: the assistant asks for no structured data.
    structured_valid = models.BooleanField(_("data fit the schema"), null=True, blank=True)
    structured_errors = models.JSONField(_("deviations from the schema"), default=list, blank=True)
    success = models.BooleanField(_("successful"), null=True, blank=True)
    outcome = models.JSONField(_("outcome"), default=list, blank=True)
    engine = models.CharField(_("written by"), max_length=8, choices=Engine.choices)
    created_at = models.DateTimeField(_("written on"), auto_now_add=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        verbose_name = _("call analysis")
        verbose_name_plural = _("call analyses")

    def __str__(self):
        return gettext("analysis %(call)s") % {"call": self.call_id}
