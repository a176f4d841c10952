from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from campaigns_app.models import MAX_CONTACTS_PER_CAMPAIGN, BlockedNumber, Campaign, CampaignContact, Outcome
from campaigns_app.selectors import COUNT_KEYS, counts_of, progress_percent
from campaigns_app.window import WindowInvalid, next_slot, window_parse
from console.fields import ClosedSerializer, CursorField, LimitField, ListedChoiceField, MomentField, PhoneQueryField
from console.ids import ID_LENGTH

DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat")


class WindowDaySerializer(serializers.Serializer):
    start = serializers.CharField(help_text="HH:MM in the tenant's zone, e.g. 09:00.")
    end = serializers.CharField(help_text="HH:MM in the tenant's zone (24:00 allowed), later than start.")


WindowSerializer = type("CampaignWindowSerializer", (serializers.Serializer,), {
    day: WindowDaySerializer(required=False) for day in DAY_NAMES
})


@extend_schema_field(WindowSerializer)
class WindowField(serializers.JSONField):
    """The calling window: weekdays (mon … sat) with their hours in the tenant's zone."""

    def to_internal_value(self, data):
        try:
            return window_parse(super().to_internal_value(data))
        except WindowInvalid as exc:
            raise serializers.ValidationError(str(exc)) from None


CountsSerializer = type("CampaignCountsSerializer", (serializers.Serializer,), {
    key: serializers.IntegerField() for key in COUNT_KEYS
})


class CampaignSerializer(serializers.ModelSerializer):
    assistant = serializers.CharField(source="assistant_id", allow_null=True)
    fromNumber = serializers.CharField(source="from_number")
    window = WindowSerializer()
    timeZone = serializers.CharField(source="tenant.time_zone", help_text="The tenant's zone, of the window.")
    maxAttempts = serializers.IntegerField(source="max_attempts")
    retryAfterMin = serializers.IntegerField(source="retry_after_min")
    voicemailTouchpoint = serializers.CharField(source="voicemail_touchpoint", allow_null=True)
    startAt = serializers.DateTimeField(source="start_at", allow_null=True)
    endAt = serializers.DateTimeField(source="end_at", allow_null=True)
    pausedReason = serializers.CharField(source="paused_reason", allow_null=True, help_text=(
        "Why the campaign is paused: operator, minute_cap_reached, from_number_unavailable; null otherwise."))
    pausedDetails = serializers.DictField(source="paused_details", help_text="e.g. the minute cap's used, cap.")
    counts = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    nextCallAt = serializers.SerializerMethodField()
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")
    startedAt = serializers.DateTimeField(source="started_at", allow_null=True)
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)

    class Meta:
        model = Campaign
        fields = ["id", "name", "assistant", "fromNumber", "purpose", "window", "timeZone", "concurrency",
                  "maxAttempts", "retryAfterMin", "voicemail", "voicemailTouchpoint", "startAt", "endAt", "state",
                  "pausedReason", "pausedDetails", "counts", "progress", "nextCallAt", "createdAt", "updatedAt",
                  "startedAt", "finishedAt"]
        read_only_fields = fields

    def to_representation(self, campaign):
        data = super().to_representation(campaign)
        data["pausedReason"] = data["pausedReason"] or None
        data["voicemailTouchpoint"] = data["voicemailTouchpoint"] or None
        return data

    def _counts(self, campaign):
        known = self.context.get("counts")
        if known and campaign.pk in known:
            return known[campaign.pk]
        if getattr(campaign, "_counts", None) is None:
            campaign._counts = counts_of(campaign)  # one query for counts and progress
        return campaign._counts

    @extend_schema_field(CountsSerializer)
    def get_counts(self, campaign):
        return self._counts(campaign)

    @extend_schema_field(serializers.IntegerField(help_text="Contacts done, in percent of all (0–100)."))
    def get_progress(self, campaign):
        return progress_percent(self._counts(campaign))

    @extend_schema_field(serializers.DateTimeField(allow_null=True, help_text=(
        "When the window next lets it call (now, if open); null once finished or when no window comes "
        "before endAt.")))
    def get_nextCallAt(self, campaign):  # noqa: N802 - the API's field name
        if campaign.is_finished:
            return None
        tenant = campaign.tenant
        slot = next_slot(timezone.now(), window=campaign.window, time_zone=tenant.time_zone, state=tenant.state,
                         start_at=campaign.start_at, end_at=campaign.end_at)
        return serializers.DateTimeField().to_representation(slot.replace(microsecond=0)) if slot else None


class CampaignFieldsMixin(ClosedSerializer):
    name = serializers.CharField(max_length=200)
    assistant = serializers.CharField(max_length=ID_LENGTH, required=False, allow_null=True, allow_blank=True,
                                      help_text="An assistant of the tenant (as_…), or null.")
    fromNumber = serializers.CharField(max_length=40, required=False, help_text=(
        "One of the tenant's numbers (any format); the caller id is always shown. Default: its first number."))
    purpose = ListedChoiceField(choices=Campaign.Purpose.choices, help_text=(
        "service: reminders and callbacks for existing customers; marketing: everything else (consent needed)."))
    window = WindowField(required=False, help_text=(
        "Weekdays and hours in the tenant's zone; default Mo–Fr 09:00–20:00, Sa 10:00–16:00. Never Sundays or "
        "the public holidays of the tenant's federal state."))
    concurrency = serializers.IntegerField(min_value=1, max_value=100, required=False, default=1,
                                           help_text="Simultaneous calls, at most the tenant's campaign limit.")
    maxAttempts = serializers.IntegerField(min_value=1, max_value=10, required=False, default=3)
    retryAfterMin = serializers.IntegerField(min_value=5, max_value=10080, required=False, default=120, help_text=(
        "Minutes before another attempt after no_answer, busy or failed."))
    voicemail = ListedChoiceField(choices=Campaign.Voicemail.choices, required=False,
                                  default=Campaign.Voicemail.HANGUP)
    voicemailTouchpoint = serializers.CharField(max_length=100, required=False, allow_null=True, allow_blank=True,
                                                help_text="The message left on a machine (default campaign.voicemail).")
    startAt = MomentField(required=False, allow_null=True)
    endAt = MomentField(required=False, allow_null=True)

    FIELD_NAMES = {"fromNumber": "from_number", "maxAttempts": "max_attempts", "retryAfterMin": "retry_after_min",
                   "voicemailTouchpoint": "voicemail_touchpoint", "startAt": "start_at", "endAt": "end_at"}

    def validate(self, attrs):
        attrs = super().validate(attrs)
        start, end = attrs.get("startAt"), attrs.get("endAt")
        if start and end and start >= end:
            raise serializers.ValidationError({"endAt": ["Must be later than startAt."]})
        return attrs

    @classmethod
    def service_kwargs(cls, data):
        kwargs = {cls.FIELD_NAMES.get(name, name): value for name, value in data.items()}
        for name in ("voicemail_touchpoint",):
            if name in kwargs and kwargs[name] is None:
                kwargs[name] = ""
        return kwargs


class CampaignCreateSerializer(CampaignFieldsMixin):
    pass


class CampaignUpdateSerializer(CampaignFieldsMixin):
    require_one = True

    def get_fields(self):
        fields = super().get_fields()
        for field in fields.values():
            field.required = False
            field.default = serializers.empty
        return fields


class ContactRowSerializer(serializers.Serializer):
    """One contact of a JSON upload (documentation; rows are read by campaigns_app/contact_rows.py)."""

    phone = serializers.CharField(help_text="Any format; German national numbers are read as such.")
    name = serializers.CharField(required=False)
    variables = serializers.DictField(child=serializers.CharField(), required=False,
                                      help_text="Per-contact variables of the scripts ({{firstName}}).")
    b2b = serializers.BooleanField(required=False, help_text="A business (presumed consent for marketing).")
    consentSource = serializers.CharField(required=False)
    consentAt = serializers.DateTimeField(required=False)
    consentText = serializers.CharField(required=False)


class ContactsUploadSerializer(serializers.Serializer):
    contacts = ContactRowSerializer(many=True, help_text=f"At most {MAX_CONTACTS_PER_CAMPAIGN:,} per campaign.")


class ContactsFileSerializer(serializers.Serializer):
    file = serializers.FileField(help_text=(
        "A CSV table (UTF-8, UTF-8 with BOM or Windows-1252; ';' or ',' separated) with a header line; at most "
        "10 MB."))


class RowErrorSerializer(serializers.Serializer):
    row = serializers.IntegerField(help_text="Line of the file (the header is line 1), or position in the JSON list.")
    field = serializers.CharField()
    reason = serializers.CharField()


class SkippedRowSerializer(serializers.Serializer):
    row = serializers.IntegerField()
    phone = serializers.CharField()
    outcome = serializers.ChoiceField(choices=[Outcome.SKIPPED_BLOCKLIST, Outcome.SKIPPED_NO_CONSENT])
    reason = serializers.CharField()


class FoldedRowSerializer(serializers.Serializer):
    row = serializers.IntegerField()
    phone = serializers.CharField()
    sameAsRow = serializers.IntegerField(allow_null=True)
    reason = serializers.CharField()


class ContactsReportSerializer(serializers.Serializer):
    campaign = serializers.CharField()
    received = serializers.IntegerField()
    added = serializers.IntegerField(help_text="Contacts that will be called.")
    duplicates = serializers.IntegerField()
    skippedBlocklist = serializers.IntegerField()
    skippedNoConsent = serializers.IntegerField()
    invalid = serializers.IntegerField()
    # The stubs take a declared field for the property Serializer.errors; DRF's metaclass pops it.
    errors = RowErrorSerializer(many=True)  # type: ignore[assignment]
    skipped = SkippedRowSerializer(many=True)
    folded = FoldedRowSerializer(many=True)
    truncated = serializers.BooleanField(help_text="The lists show the first 1,000 of their kind; counts are whole.")
    file = serializers.DictField(required=False, help_text="An uploaded file's encoding and separator as read.")
    counts = CountsSerializer()


class AttemptSerializer(serializers.Serializer):
    id = serializers.CharField()
    number = serializers.IntegerField()
    call = serializers.CharField(source="call_id", allow_null=True)
    state = serializers.CharField()
    outcome = serializers.CharField(allow_null=True)
    answeredBy = serializers.CharField(source="answered_by", allow_null=True)
    claimedAt = serializers.DateTimeField(source="claimed_at")
    endedAt = serializers.DateTimeField(source="ended_at", allow_null=True)

    class Meta:
        ref_name = "CampaignAttempt"  # webhooks_app has an Attempt of its own

    def to_representation(self, attempt):
        data = super().to_representation(attempt)
        data["outcome"] = data["outcome"] or None
        data["answeredBy"] = data["answeredBy"] or None
        return data


class ContactSerializer(serializers.ModelSerializer):
    consentSource = serializers.CharField(source="consent_source")
    consentAt = serializers.DateTimeField(source="consent_at", allow_null=True)
    consentText = serializers.CharField(source="consent_text")
    outcome = serializers.CharField(allow_null=True, help_text="The last attempt's outcome; final once done.")
    dueAt = serializers.DateTimeField(source="due_at")
    lastAttemptAt = serializers.DateTimeField(source="last_attempt_at", allow_null=True)
    completedAt = serializers.DateTimeField(source="completed_at", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    attemptList = AttemptSerializer(source="attempt_set", many=True)

    class Meta:
        model = CampaignContact
        fields = ["id", "row", "phone", "name", "variables", "b2b", "consentSource", "consentAt", "consentText",
                  "status", "outcome", "attempts", "dueAt", "lastAttemptAt", "completedAt", "redacted", "createdAt",
                  "attemptList"]
        read_only_fields = fields

    def to_representation(self, contact):
        data = super().to_representation(contact)
        data["outcome"] = data["outcome"] or None
        return data


class ContactListQuerySerializer(ClosedSerializer):
    status = serializers.ChoiceField(choices=CampaignContact.Status.choices, required=False)
    outcome = serializers.ChoiceField(choices=Outcome.choices, required=False)
    limit = LimitField(help_text="1–200 (larger values count as 200), default 50.")
    cursor = CursorField()


class BlockedNumberSerializer(serializers.ModelSerializer):
    phone = serializers.CharField(help_text=(
        "E.164; once the number was erased (privacy), its pseudonym (`anon-…`), by which the entry still blocks."))
    call = serializers.CharField(source="call_id", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    erasedAt = serializers.DateTimeField(source="erased_at", allow_null=True, help_text=(
        "When the number's data was erased (privacy); the entry is kept: it makes an objection last."))

    class Meta:
        model = BlockedNumber
        fields = ["id", "phone", "reason", "note", "call", "createdAt", "erasedAt"]
        read_only_fields = fields

    def to_representation(self, entry):
        data = super().to_representation(entry)
        data["call"] = data["call"] or None
        return data


class BlockedNumberCreateSerializer(ClosedSerializer):
    phone = serializers.CharField(max_length=40, help_text="Any format; stored in E.164.")
    note = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    reason = ListedChoiceField(choices=BlockedNumber.Reason.choices, required=False,
                               default=BlockedNumber.Reason.MANUAL, help_text=(
                                   "opt_out: the person asked for no more calls (their calls under way end "
                                   "opted_out too, and the entry cannot be deleted through the API)."))


class BlocklistQuerySerializer(ClosedSerializer):
    phone = PhoneQueryField(required=False, help_text="Only this number (any format).")
    limit = LimitField(help_text="1–200 (larger values count as 200), default 50.")
    cursor = CursorField()
