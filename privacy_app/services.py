"""Writes of the privacy features (docs/privacy.md): retention settings and their
application, exports (access by caller) and erasures. Exports, erasures and retention
runs record themselves in the audit trail in the same transaction as their work."""
from collections.abc import Collection, Iterable
from datetime import datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import connection, models, transaction
from django.db.models import Field, QuerySet
from django.utils import timezone

from calendars_app.services import appointments_erase
from calls_app import redaction
from calls_app.analysis import analyses_erase, analyses_redact
from calls_app.call_data import registered_call_data
from calls_app.models import Call, CarrierEvent, SimDial, TranscriptEntry
from calls_app.recordings import recordings_delete
from calls_app.services import call_tool_notes_erase
from campaigns_app.models import BlockedNumber, CampaignContact
from campaigns_app.services import number_erase as campaigns_number_erase
from console.audit.services import audit_record
from console.errors import ValidationFailed
from console.idempotency.models import IdempotencyRecord
from console.numbers.models import PhoneNumber
from console.pseudonyms import pseudonym_for
from console.quotas import quota_take
from console.tenants.models import Tenant
from leads_app.models import Lead
from messaging_app.services import sms_erase
from privacy_app import selectors
from privacy_app.models import DEFAULT_RETENTION_DAYS, ErasedCaller, Erasure, Export, RetentionSettings
from privacy_app.selectors import Subject
from webhooks_app import services as webhooks

EXPORT_LIFETIME = timedelta(days=7)
# Longer than any carrier retries an event: a late call.started of an erased caller's
# call is recognised this long after the erasure.
ERASED_CALLER_LIFETIME = timedelta(days=30)
# An event still waiting for its call.started after this long will never be applied.
PENDING_EVENT_LIFETIME = timedelta(days=7)
# What an erased idempotency record's request hash becomes: it matches no request, so a
# replay of the erased request is refused (409) instead of running again.
ERASED_REQUEST_HASH = "erased"

RETENTION_COUNTS = ("transcriptLines", "recordingLinks", "callsRedacted", "carrierEvents", "leads", "exports",
                    "erasedCallers", "webhookDeliveries", "analyses")
ERASURE_COUNTS = ("calls", "transcriptLines", "recordingLinks", "carrierEvents", "leads", "exports",
                  "idempotencyRecords", "adminLogEntries", "webhookDeliveries", "analyses", "campaignContacts",
                  "blocklistEntries", "sms", "appointments")
SYSTEM_ACTOR = "system:apply_retention"


def _counts(names: Iterable[str]) -> dict[str, int]:
    """The counts of a receipt: ours, then one per kind of call data other apps keep
    (calls_app.call_data, e.g. `agentSessions`)."""
    return dict.fromkeys([*names, *(data.name for data in registered_call_data())], 0)


def _deleted(queryset: QuerySet[Any]) -> int:
    """How many rows of the queryset's own model a delete removed."""
    return queryset.delete()[1].get(queryset.model._meta.label, 0)


def _check_not_own_number(tenant: Tenant, e164: str) -> None:
    # The tenant's own numbers are in every call; they name the business, not a caller.
    if PhoneNumber.objects.for_tenant(tenant).filter(e164=e164).exists():
        raise ValidationFailed.field("phone", "This is one of the tenant's own numbers, not a caller's.")


def _subject(tenant: Tenant, e164: str | None, call_id: str | None) -> Subject:
    """The subject of an export or erasure: a caller's number or one of the tenant's
    calls (exactly one of them; another tenant's call is unknown, 400 on `callId`)."""
    if bool(e164) == bool(call_id):
        raise TypeError("Give either e164 or call_id.")
    if e164:
        _check_not_own_number(tenant, e164)
    elif not Call.objects.for_tenant(tenant).filter(pk=call_id).exists():
        raise ValidationFailed.field("callId", f"No call '{call_id}' in this tenant.")
    return Subject(tenant=tenant, e164=e164 or "", call_id=call_id or "")


# --- Retention --------------------------------------------------------------------------

@transaction.atomic
def retention_settings_update(*, tenant: Tenant, **days: int | None) -> RetentionSettings:
    """Sets any of transcript_days, recording_days, lead_days (None: without limit)."""
    unknown = set(days) - set(DEFAULT_RETENTION_DAYS)
    if unknown:
        raise TypeError(f"Unknown retention settings: {sorted(unknown)}")
    # Created with the defaults if the tenant never chose, then locked: two changes at
    # once neither fail on the unique tenant nor lose one another's fields.
    RetentionSettings.objects.get_or_create(tenant=tenant)
    current = RetentionSettings.objects.select_for_update().get(tenant=tenant)
    current.tenant = tenant  # the row was selected by it: neither the check nor the answer looks it up again
    for name, value in days.items():
        setattr(current, name, value)
    current.full_clean(exclude=["tenant"])
    current.save()
    return current


def retention_apply(*, tenant: Tenant, now: datetime | None = None, dry_run: bool = False) -> dict[str, int]:
    """Removes what is older than the tenant's periods; returns the counts by kind.

    Transcript lines of calls older than the transcript period are deleted with the
    calls' stored carrier events and the data other apps keep per call (the agent's
    sessions), recording links older than theirs are cleared, and such calls are
    flagged `redacted`; the calls stay with duration, direction, status and usage.
    Leads older than their period, webhook deliveries older than theirs and expired
    exports are deleted. One transaction; with `dry_run` it is rolled back, so the
    counts are exactly what a real run would remove."""
    now = now or timezone.now()
    retention = selectors.retention_settings_for(tenant=tenant)
    counts = _counts(RETENTION_COUNTS)
    with transaction.atomic():
        if retention.transcript_days:
            _expire_transcripts(tenant, now - timedelta(days=retention.transcript_days), counts)
        if retention.recording_days:
            _expire_recordings(tenant, now - timedelta(days=retention.recording_days), counts)
        if retention.lead_days:
            cutoff = now - timedelta(days=retention.lead_days)
            counts["leads"] = _deleted(Lead.objects.for_tenant(tenant).filter(created_at__lt=cutoff))
        _expire_deliveries(tenant, now, retention, counts)
        counts["exports"] = _deleted(Export.objects.for_tenant(tenant).filter(expires_at__lte=now))
        counts["erasedCallers"] = _deleted(
            ErasedCaller.objects.for_tenant(tenant).filter(erased_at__lt=now - ERASED_CALLER_LIFETIME))
        if any(counts.values()):
            audit_record(actor=SYSTEM_ACTOR, action="privacy.retention", tenant=tenant, details=counts, at=now)
        if dry_run:
            transaction.set_rollback(True)
    return counts


def _expire_transcripts(tenant: Tenant, cutoff: datetime, counts: dict[str, int]) -> None:
    old = Call.objects.for_tenant(tenant).filter(created_at__lt=cutoff)
    # The calls first: a transcript line arriving at this moment waits for this
    # transaction (calls_app.event_sql) and then sees the flag.
    counts["callsRedacted"] += old.filter(redacted=False).update(redacted=True)
    counts["transcriptLines"] = _deleted(TranscriptEntry.objects.filter(call__in=old))
    # Their events are copies of the same content (and numbers); a carrier does not
    # retry an event for months, and if one did, the redacted call would drop it.
    counts["carrierEvents"] += _deleted(selectors.events_of_calls(old).filter(state=CarrierEvent.State.APPLIED))
    counts["analyses"] = analyses_redact(calls=old)
    # What other apps keep per call (the agent's sessions with their variables) goes
    # with the transcript: it is the same conversation's data.
    for data in registered_call_data():
        counts[data.name] += data.expire(tenant=tenant, created_before=cutoff)


def _expire_deliveries(tenant: Tenant, now: datetime, retention: RetentionSettings, counts: dict[str, int]) -> None:
    """Webhook deliveries (with their attempts) go after `delivery_days`; a delivery of
    a lead's event never outlives the lead's period (it is a copy of the lead)."""
    if retention.delivery_days:
        counts["webhookDeliveries"] += webhooks.deliveries_purge(
            tenant=tenant, created_before=now - timedelta(days=retention.delivery_days))
    if retention.lead_days and (retention.delivery_days is None or retention.lead_days < retention.delivery_days):
        counts["webhookDeliveries"] += webhooks.deliveries_purge(
            tenant=tenant, created_before=now - timedelta(days=retention.lead_days), event_type_prefix="lead.")


def _expire_recordings(tenant: Tenant, cutoff: datetime, counts: dict[str, int]) -> None:
    old = Call.objects.for_tenant(tenant).filter(created_at__lt=cutoff)
    with_links = old.exclude(recording_url="")
    recordings_delete(calls=with_links)  # our own recordings' files go with their links
    counts["callsRedacted"] += with_links.filter(redacted=False).update(redacted=True)
    counts["recordingLinks"] = with_links.update(recording_url="")
    ends = list(selectors.events_of_calls(old).filter(type="call.ended").exclude(data__recordingUrl="")
                .only("pk", "type", "data"))
    for event in ends:
        event.data = redaction.stripped(event.type, event.data, keep_recording=False)
    _rewrite_event_data(ends)
    counts["carrierEvents"] += len(ends)


@transaction.atomic
def pending_events_purge(*, now: datetime | None = None) -> int:
    """Deletes events that waited for their call.started longer than it ever takes:
    they hold transcript text of calls that never reached any tenant."""
    cutoff = (now or timezone.now()) - PENDING_EVENT_LIFETIME
    return _deleted(CarrierEvent.objects.filter(state=CarrierEvent.State.PENDING, received_at__lt=cutoff))


# --- Exports ----------------------------------------------------------------------------

def export_create(*, tenant: Tenant, e164: str | None = None, call_id: str | None = None, actor: str,
                  request_id: str = "", now: datetime | None = None) -> Export:
    """An export of everything the tenant holds about the number, or about one call
    (`call_id`: a web call of the voice agent has no number). Built at once up to
    PRIVACY_EXPORT_SYNC_ROWS rows, else left `pending` for `build_exports`."""
    subject = _subject(tenant, e164, call_id)
    now = now or timezone.now()
    call_ids = selectors.subject_call_ids(subject)
    rows = selectors.export_size(subject, call_ids)
    with transaction.atomic():
        quota_take(tenant=tenant, name="exports")
        export = Export.objects.create(
            tenant=tenant, phone=subject.e164, call_id=subject.call_id,
            subject=pseudonym_for(tenant=tenant, e164=subject.e164) if subject.e164 else "",
            status=Export.Status.PENDING, requested_by=actor, created_at=now, expires_at=now + EXPORT_LIFETIME,
        )
        if rows <= settings.PRIVACY_EXPORT_SYNC_ROWS:
            _export_build(export, now, call_ids=call_ids)
        audit_record(actor=actor, action="privacy.export", tenant=tenant, object_id=export.pk,
                     request_id=request_id, details={"status": export.status, "rows": rows}, at=now)
    return export


def _export_build(export: Export, now: datetime, call_ids: Collection[str] | None = None) -> None:
    subject = Subject(tenant=export.tenant, e164=export.phone, call_id=export.call_id)
    export.document = selectors.export_document(subject=subject, created_at=export.created_at,
                                                expires_at=export.expires_at, call_ids=call_ids)
    export.status, export.ready_at = Export.Status.READY, now
    export.save(update_fields=["document", "status", "ready_at"])


def exports_build_pending(*, now: datetime | None = None) -> int:
    """Builds every pending export (the job of `build_exports`); returns how many."""
    now = now or timezone.now()
    built = 0
    pending = Export.objects.filter(status=Export.Status.PENDING, expires_at__gt=now).values_list("pk", flat=True)
    for export_id in list(pending):
        with transaction.atomic():
            export = (Export.objects.select_for_update().select_related("tenant")
                      .filter(pk=export_id, status=Export.Status.PENDING).first())
            if export is not None:  # not erased or built meanwhile
                _export_build(export, now)
                built += 1
    return built


@transaction.atomic
def export_record_download(*, export: Export, actor: str, request_id: str = "") -> None:
    """A download in the admin is an access to personal data: it goes into the trail."""
    audit_record(actor=actor, action="privacy.export.download", tenant=export.tenant, object_id=export.pk,
                 request_id=request_id)


# --- Erasure ----------------------------------------------------------------------------

def erasure_create(*, tenant: Tenant, e164: str | None = None, call_id: str | None = None, actor: str,
                   request_id: str = "", now: datetime | None = None) -> Erasure:
    """Erases the number from everything of the tenant, or one call's data (`call_id`),
    in one transaction; returns the receipt (counts by kind, no personal data). A second
    erasure of the same subject finds nothing and counts 0 everywhere."""
    subject = _subject(tenant, e164, call_id)
    now = now or timezone.now()
    counts = _counts(ERASURE_COUNTS)
    with transaction.atomic():
        # Locked first: a transcript line arriving at this moment waits for this
        # transaction (calls_app.event_sql) and then finds the call redacted.
        calls = list(selectors.subject_calls(subject).select_for_update(of=("self",))
                     .values_list("pk", "direction", "from_e164", "to_e164"))
        call_ids = [pk for pk, *_ in calls]
        lead_ids = list(selectors.subject_leads(subject).values_list("pk", flat=True))
        # The caller's number: the subject's, or the one call's (a web call has none).
        number = subject.e164 or next((_caller_number(*call[1:]) for call in calls), "")
        pseudonym = pseudonym_for(tenant=tenant, e164=number) if number else ""
        # The campaigns' contacts of the number (not of one call: they are by number),
        # before the calls: an attempt stopped before its dial fails its call, whose
        # `call.ended` delivery the deliveries' erasure below then finds.
        campaigns = campaigns_number_erase(tenant=tenant, e164=subject.e164, now=now) if subject.e164 else None
        deliveries = selectors.subject_deliveries(subject, call_ids)
        _erase_calls(call_ids, number, pseudonym, counts)
        _erase_what_the_assistants_wrote(tenant, call_ids, lead_ids, number, counts)
        counts["leads"] = _deleted(Lead.objects.filter(pk__in=lead_ids))
        counts["exports"] = _deleted(selectors.exports_holding(
            tenant=tenant, pseudonym=pseudonym if subject.e164 else "", call_ids=call_ids, lead_ids=lead_ids))
        counts["idempotencyRecords"] = IdempotencyRecord.objects.filter(
            scope__endswith=f":{tenant.pk}", body__id__in=call_ids + lead_ids,
        ).update(request_hash=ERASED_REQUEST_HASH, body=None)
        if campaigns is not None:
            counts["campaignContacts"] = len(campaigns.contact_ids)
            counts["blocklistEntries"] = len(campaigns.blocklist_ids)
        counts["adminLogEntries"] = _erase_admin_log([
            (Call, call_ids), (Lead, lead_ids), (CampaignContact, campaigns.contact_ids if campaigns else []),
            (BlockedNumber, campaigns.blocklist_ids if campaigns else [])])
        counts["appointments"] = appointments_erase(tenant=tenant, e164=subject.e164 or None, call_ids=call_ids)
        counts["webhookDeliveries"] = webhooks.deliveries_erase(deliveries=deliveries, rewrite=_erased_payload,
                                                                now=now)
        for data in registered_call_data():
            counts[data.name] = data.erase(tenant=tenant, call_ids=call_ids)
        # The SMS to the number (or of the call), queued reminders among them: deleted.
        counts["sms"] = sms_erase(tenant=tenant, e164=subject.e164, call_ids=call_ids)
        if subject.e164 and any(counts.values()):
            ErasedCaller.objects.update_or_create(tenant=tenant, pseudonym=pseudonym, defaults={"erased_at": now})
        receipt = Erasure.objects.create(tenant=tenant, counts=counts, requested_by=actor, erased_at=now)
        audit_record(actor=actor, action="privacy.erasure", tenant=tenant, object_id=receipt.pk,
                     request_id=request_id, details=counts, at=now)
    return receipt


def _caller_number(direction: str, from_e164: str, to_e164: str) -> str:
    """The caller's side of a call, if it is a number (not empty, not a pseudonym)."""
    number = to_e164 if direction == Call.Direction.OUTBOUND else from_e164
    return number if number.startswith("+") else ""


def _erased_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """What an erased webhook delivery keeps: the event's type and time and the id of
    the lead or call it announced (the lead is deleted, the call pseudonymised)."""
    data = payload.get("data")
    if not isinstance(data, dict):
        data = {}
    return {"type": payload.get("type"), "timestamp": payload.get("timestamp"),
            "data": {"id": data.get("id"), "erased": True}}


def _erase_calls(call_ids: list[str], e164: str, pseudonym: str, counts: dict[str, int]) -> None:
    calls = Call.objects.filter(pk__in=call_ids)
    events = list(selectors.events_of_calls(calls).only("pk", "type", "data"))
    counts["calls"] = len(call_ids)
    if e164:
        calls.filter(from_e164=e164).update(from_e164=pseudonym)
        calls.filter(to_e164=e164).update(to_e164=pseudonym)
    recordings_delete(calls=calls)  # our own recordings' files go with their links
    counts["recordingLinks"] = calls.exclude(recording_url="").update(recording_url="")
    calls.update(redacted=True)
    counts["transcriptLines"] = _deleted(TranscriptEntry.objects.filter(call_id__in=call_ids))
    if e164:
        SimDial.objects.filter(call_id__in=call_ids, to_e164=e164).update(to_e164=pseudonym)
        SimDial.objects.filter(call_id__in=call_ids, from_e164=e164).update(from_e164=pseudonym)
    changed = []
    for event in events:
        numbers = None
        if e164:
            numbers = tuple(pseudonym if event.data.get(side) == e164 else event.data.get(side)
                            for side in ("from", "to"))
        kept = redaction.stripped(event.type, event.data, keep_text=False, keep_recording=False, numbers=numbers)
        if kept != event.data:
            event.data = kept
            changed.append(event)
    _rewrite_event_data(changed)
    counts["carrierEvents"] = len(changed)


def _erase_what_the_assistants_wrote(tenant: Tenant, call_ids: list[str], lead_ids: list[str], e164: str,
                                     counts: dict[str, int]) -> None:
    """The assistants' records (issue 28, calls_app): the analyses of the caller's
    calls and of calls whose callback lead is the caller's (and any whose summary names
    the number), and the system notes of tool calls that name the number in the
    tenant's other calls (a callback taken for this number during someone else's call).
    Run before the leads are deleted: the analyses are found through them."""
    counts["analyses"] = analyses_erase(tenant=tenant, call_ids=call_ids, lead_ids=lead_ids, e164=e164)
    if e164:  # a web call's erasure has no number to look for in the other calls
        counts["transcriptLines"] += call_tool_notes_erase(tenant=tenant, e164=e164)


def _rewrite_event_data(events: list[CarrierEvent]) -> None:
    """Stores the new `data` of each event: one prepared UPDATE run for all rows. The
    ORM's save() per row or bulk_update() (a CASE branch per row) took seconds for a
    frequent caller's erasure (docs/privacy.md, docs/performance-history.md)."""
    if not events:
        return
    quote = connection.ops.quote_name
    # The event's own column: get_field's type also covers relations, which have none.
    data = cast(Field, CarrierEvent._meta.get_field("data"))
    sql = "UPDATE {table} SET {data} = %s WHERE {pk} = %s".format(
        table=quote(CarrierEvent._meta.db_table), data=quote(data.column), pk=quote(CarrierEvent._meta.pk.column))
    with connection.cursor() as cursor:
        cursor.executemany(sql, [(data.get_db_prep_save(event.data, connection), event.pk) for event in events])


def _erase_admin_log(objects: list[tuple[type[models.Model], list[str]]]) -> int:
    """The admin's change log names objects by their title (numbers masked since
    console.phone.mask, but older entries may hold them whole)."""
    changed = 0
    for model, ids in objects:
        if ids:
            changed += LogEntry.objects.filter(
                content_type=ContentType.objects.get_for_model(model), object_id__in=ids,
            ).exclude(object_repr="[erased]").update(object_repr="[erased]")
    return changed
