"""Writes of campaigns: the campaign and its state, its contacts, the blocklist and
`opt_out` (the dialling itself is campaigns_app/scheduler.py)."""
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from campaigns_app.contact_rows import ContactRow, RowError
from campaigns_app.errors import CampaignFinished, CampaignStateConflict, OptOutKept, TooManyContacts
from campaigns_app.models import (
    MAX_CONTACTS_PER_CAMPAIGN,
    BlockedNumber,
    Campaign,
    CampaignContact,
    Outcome,
)
from campaigns_app.window import DEFAULT_WINDOW
from console.assistants.models import Assistant
from console.audit.services import audit_record
from console.errors import ValidationFailed
from console.jobs.services import job_enqueue_on_commit
from console.numbers.models import PhoneNumber
from console.phone import InvalidPhoneNumber, to_e164
from console.tenants.models import Tenant
from scripts_app.catalog import catalog
from webhooks_app.services import event_publish

TICK_JOB = "campaigns_app.scheduler.campaigns_tick"
DEFAULT_VOICEMAIL_TOUCHPOINT = "campaign.voicemail"
# How many rows of each kind an upload's report lists (all are counted).
REPORT_LIST_LIMIT = 1000
# Which state each change leaves from.
TRANSITIONS = {
    "start": ((Campaign.State.DRAFT,), Campaign.State.RUNNING),
    "pause": ((Campaign.State.RUNNING,), Campaign.State.PAUSED),
    "resume": ((Campaign.State.PAUSED,), Campaign.State.RUNNING),
    "cancel": ((Campaign.State.DRAFT, Campaign.State.RUNNING, Campaign.State.PAUSED), Campaign.State.CANCELED),
}


# --- The campaign ----------------------------------------------------------------------

def _from_number(tenant: Tenant, value: str | None) -> str:
    numbers = PhoneNumber.objects.for_tenant(tenant)
    if value is None:
        first = numbers.order_by("e164").values_list("e164", flat=True).first()
        if first is None:
            raise ValidationFailed.field("fromNumber", "The tenant has no phone number to call from; add one "
                                                       "(POST /v2/numbers): campaigns never call with a hidden number.")
        return first
    try:
        e164 = to_e164(value)
    except InvalidPhoneNumber as exc:
        raise ValidationFailed.field("fromNumber", str(exc)) from None
    if not numbers.filter(e164=e164).exists():
        raise ValidationFailed.field("fromNumber", "Must be one of the tenant's own numbers (GET /v2/numbers).")
    return e164


def _assistant(tenant: Tenant, assistant_id: str | None) -> Assistant | None:
    if not assistant_id:
        return None
    assistant = Assistant.objects.for_tenant(tenant).filter(pk=assistant_id).first()
    if assistant is None:
        raise ValidationFailed.field("assistant", f"No assistant '{assistant_id}' in this tenant.")
    return assistant


def _checked(tenant: Tenant, fields: dict[str, Any]) -> dict[str, Any]:
    """The fields of a create or change, checked against the tenant (numbers, assistants,
    its concurrency limit) and the touchpoint catalog."""
    errors: dict[str, list[str]] = {}
    limit = tenant.campaign_concurrency_limit
    if fields.get("concurrency") is not None and fields["concurrency"] > limit:
        errors["concurrency"] = [f"At most {limit} simultaneous calls for this tenant (its campaign limit)."]
    touchpoint = fields.get("voicemail_touchpoint")
    if touchpoint and touchpoint not in catalog():
        errors["voicemailTouchpoint"] = [f"'{touchpoint}' is not a touchpoint of the catalog (GET /v2/audio/scripts)."]
    if errors:
        raise ValidationFailed(details=errors)
    return fields


def _voicemail_defaults(campaign: Campaign) -> None:
    if campaign.voicemail == Campaign.Voicemail.LEAVE_MESSAGE and not campaign.voicemail_touchpoint:
        campaign.voicemail_touchpoint = DEFAULT_VOICEMAIL_TOUCHPOINT
    if campaign.start_at and campaign.end_at and campaign.start_at >= campaign.end_at:
        raise ValidationFailed.field("endAt", "Must be later than startAt.")


@transaction.atomic
def campaign_create(*, tenant: Tenant, name: str, purpose: str, assistant: str | None = None,
                    from_number: str | None = None, window: dict[str, Any] | None = None, concurrency: int = 1,
                    max_attempts: int = 3, retry_after_min: int = 120, voicemail: str = Campaign.Voicemail.HANGUP,
                    voicemail_touchpoint: str = "", start_at: datetime | None = None,
                    end_at: datetime | None = None) -> Campaign:
    _checked(tenant, {"concurrency": concurrency, "voicemail_touchpoint": voicemail_touchpoint})
    campaign = Campaign(
        tenant=tenant, name=name, purpose=purpose, assistant=_assistant(tenant, assistant),
        from_number=_from_number(tenant, from_number), window=window or DEFAULT_WINDOW, concurrency=concurrency,
        max_attempts=max_attempts, retry_after_min=retry_after_min, voicemail=voicemail,
        voicemail_touchpoint=voicemail_touchpoint or "", start_at=start_at, end_at=end_at,
    )
    _voicemail_defaults(campaign)
    campaign.save()
    return campaign


def _locked(campaign: Campaign) -> Campaign:
    return Campaign.objects.select_for_update().select_related("tenant").get(pk=campaign.pk)


@transaction.atomic
def campaign_update(*, campaign: Campaign, **fields: Any) -> Campaign:
    """Changes a campaign that is not finished; its purpose only while it is a draft
    (its contacts were checked for consent by it)."""
    campaign = _locked(campaign)
    if campaign.is_finished:
        raise CampaignFinished(details={"state": campaign.state})
    if "purpose" in fields and fields["purpose"] != campaign.purpose and campaign.state != Campaign.State.DRAFT:
        raise CampaignStateConflict("The purpose can change only while the campaign is a draft: its contacts "
                                    "were checked for consent by it.", details={"state": campaign.state})
    _checked(campaign.tenant, fields)
    if "assistant" in fields:
        fields["assistant"] = _assistant(campaign.tenant, fields["assistant"])
    if "from_number" in fields:
        fields["from_number"] = _from_number(campaign.tenant, fields["from_number"])
    for name, value in fields.items():
        setattr(campaign, name, value)
    _voicemail_defaults(campaign)
    campaign.save(update_fields=[*fields, "voicemail_touchpoint", "updated_at"])
    return campaign


@transaction.atomic
def campaign_delete(*, campaign: Campaign) -> None:
    """Only a draft goes: a campaign that called keeps its contacts' consent and outcomes."""
    campaign = _locked(campaign)
    if campaign.state != Campaign.State.DRAFT:
        raise CampaignStateConflict("Only a draft can be deleted; cancel the campaign instead (its consent "
                                    "records are kept).", details={"state": campaign.state})
    campaign.delete()


@transaction.atomic
def campaign_transition(*, campaign: Campaign, change: str, actor: str = "", now: datetime | None = None) -> Campaign:
    """`start`, `pause`, `resume` or `cancel`; a change the state does not allow → 409."""
    allowed_from, target = TRANSITIONS[change]
    campaign = _locked(campaign)
    if campaign.state not in allowed_from:
        raise CampaignStateConflict(
            f"A {campaign.state} campaign cannot {change}; that needs state {' or '.join(allowed_from)}.",
            details={"state": campaign.state, "allowedFrom": list(allowed_from)})
    now = now or timezone.now()
    fields = ["state", "paused_reason", "paused_details", "updated_at"]
    campaign.state = target
    campaign.paused_reason, campaign.paused_details = "", {}
    if change == "start":
        campaign.started_at = now
        fields.append("started_at")
        announce(campaign, "campaign.started", key=f"campaign.started:{campaign.pk}")
    elif change == "pause":
        campaign_pause(campaign=campaign, reason=Campaign.PausedReason.OPERATOR, locked=True, now=now)
        return campaign
    elif change == "cancel":
        campaign.finished_at = now
        fields.append("finished_at")
    campaign.save(update_fields=fields)
    if target == Campaign.State.RUNNING:
        job_enqueue_on_commit(TICK_JOB)
    return campaign


def campaign_pause(*, campaign: Campaign, reason: str, details: dict[str, Any] | None = None, locked: bool = False,
                   now: datetime | None = None) -> Campaign:
    """Pauses a running campaign (in the caller's transaction) with its reason and the
    `campaign.paused` webhook."""
    if not locked:
        campaign = _locked(campaign)
        if campaign.state != Campaign.State.RUNNING:
            return campaign
    campaign.state = Campaign.State.PAUSED
    campaign.paused_reason, campaign.paused_details = reason, details or {}
    campaign.pauses += 1
    campaign.save(update_fields=["state", "paused_reason", "paused_details", "pauses", "updated_at"])
    announce(campaign, "campaign.paused", key=f"campaign.paused:{campaign.pk}:{campaign.pauses}",
             extra={"reason": reason, "details": details or {}})
    return campaign


def campaign_complete(*, campaign: Campaign, now: datetime) -> Campaign:
    """Completes a running campaign (in the caller's transaction, campaign locked)."""
    campaign.state = Campaign.State.COMPLETED
    campaign.finished_at = now
    campaign.save(update_fields=["state", "finished_at", "updated_at"])
    announce(campaign, "campaign.completed", key=f"campaign.completed:{campaign.pk}")
    return campaign


def announce(campaign: Campaign, event_type: str, *, key: str, extra: dict[str, Any] | None = None) -> None:
    from campaigns_app.selectors import counts_of

    event_publish(tenant=campaign.tenant, event_type=event_type, key=key, data={
        "id": campaign.pk, "name": campaign.name, "state": campaign.state, "purpose": campaign.purpose,
        "counts": counts_of(campaign), **(extra or {}),
    })


def contact_announce(contact: CampaignContact, campaign: Campaign) -> None:
    event_publish(tenant=campaign.tenant, event_type="campaign.contact.completed",
                  key=f"campaign.contact.completed:{contact.pk}", data={
                      "id": contact.pk, "campaign": campaign.pk, "phone": contact.phone, "outcome": contact.outcome,
                      "attempts": contact.attempts, "completedAt": contact.completed_at,
                  })


# --- Contacts --------------------------------------------------------------------------

@transaction.atomic
def contacts_add(*, campaign: Campaign, rows: list[ContactRow], errors: Iterable[RowError] = (),
                 now: datetime | None = None) -> dict[str, Any]:
    """Takes the good rows of an upload (the bad ones are reported with their row and
    reason); folds duplicates (in the upload and with the campaign's contacts); stores
    numbers of the blocklist as `skipped_blocklist` and, for `marketing`, contacts
    without documented consent (source, time and text) that are not businesses as
    `skipped_no_consent`. Returns the report."""
    now = now or timezone.now()
    campaign = _locked(campaign)
    if campaign.is_finished:
        raise CampaignFinished(details={"state": campaign.state})
    existing = set(CampaignContact.objects.filter(campaign=campaign, redacted=False).values_list("phone", flat=True))
    blocked = _blocked_among(campaign.tenant, {row.phone for row in rows})
    marketing = campaign.purpose == Campaign.Purpose.MARKETING
    first_row_of: dict[str, int] = {}
    new: list[CampaignContact] = []
    folded: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for row in rows:
        if row.phone in first_row_of or row.phone in existing:
            same = first_row_of.get(row.phone)
            folded.append({"row": row.row, "phone": row.phone, "sameAsRow": same,
                           "reason": f"Same number as row {same}." if same else "Already a contact of the campaign."})
            continue
        first_row_of[row.phone] = row.row
        outcome, reason = "", ""
        if row.phone in blocked:
            outcome, reason = Outcome.SKIPPED_BLOCKLIST, "The number is on the tenant's blocklist."
        elif marketing and not row.b2b and not row.has_consent:
            outcome = Outcome.SKIPPED_NO_CONSENT
            missing = [name for name, value in (("consentSource", row.consent_source), ("consentAt", row.consent_at),
                                                ("consentText", row.consent_text)) if not value]
            reason = (f"Marketing calls to consumers need documented prior consent (§ 7 Abs. 2 Nr. 1 UWG); "
                      f"missing: {', '.join(missing)}. Mark businesses with b2b: true.")
        if outcome:
            skipped.append({"row": row.row, "phone": row.phone, "outcome": outcome, "reason": reason})
        new.append(CampaignContact(
            tenant=campaign.tenant, campaign=campaign, phone=row.phone, name=row.name, variables=row.variables,
            b2b=row.b2b, consent_source=row.consent_source, consent_at=row.consent_at, consent_text=row.consent_text,
            row=row.row, due_at=now,
            status=CampaignContact.Status.DONE if outcome else CampaignContact.Status.PENDING, outcome=outcome,
            completed_at=now if outcome else None,
        ))
    if len(existing) + len(new) > MAX_CONTACTS_PER_CAMPAIGN:
        raise TooManyContacts(details={"maxContacts": MAX_CONTACTS_PER_CAMPAIGN, "existing": len(existing),
                                       "new": len(new)})
    _insert(new)
    errors = [error.as_dict() for error in errors]
    counted = {outcome: sum(1 for entry in skipped if entry["outcome"] == outcome)
               for outcome in (Outcome.SKIPPED_BLOCKLIST, Outcome.SKIPPED_NO_CONSENT)}
    return {
        "campaign": campaign.pk,
        "received": len(rows) + len(errors),
        "added": len(new) - len(skipped),
        "duplicates": len(folded),
        "skippedBlocklist": counted[Outcome.SKIPPED_BLOCKLIST],
        "skippedNoConsent": counted[Outcome.SKIPPED_NO_CONSENT],
        "invalid": len(errors),
        "errors": errors[:REPORT_LIST_LIMIT],
        "skipped": skipped[:REPORT_LIST_LIMIT],
        "folded": folded[:REPORT_LIST_LIMIT],
        "truncated": max(len(errors), len(skipped), len(folded)) > REPORT_LIST_LIMIT,
    }


def _insert(contacts: list[CampaignContact]) -> None:
    """Inserts new contacts with one prepared INSERT run for all rows (executemany): an
    upload of 50,000 contacts spent most of its time in bulk_create's per-field
    preparation of every value (docs/performance.md). The values are prepared as the
    ORM prepares them, field by field, for the fields whose database form differs."""
    if not contacts:
        return
    created = timezone.now()
    fields = [field for field in CampaignContact._meta.concrete_fields]
    prepared = {field.attname for field in fields
                if field.get_internal_type() in ("JSONField", "DateTimeField")}
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {connection.ops.quote_name(CampaignContact._meta.db_table)} ({columns}) VALUES ({placeholders})"
    rows = []
    for contact in contacts:
        contact.created_at = created
        rows.append([field.get_db_prep_save(getattr(contact, field.attname), connection)
                     if field.attname in prepared else getattr(contact, field.attname) for field in fields])
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 5000):
            cursor.executemany(sql, rows[start:start + 5000])


def _blocked_among(tenant: Tenant, phones: Iterable[str]) -> set[str]:
    phones, blocked = list(phones), set()
    for start in range(0, len(phones), 500):
        blocked.update(BlockedNumber.objects.for_tenant(tenant).filter(phone__in=phones[start:start + 500])
                       .values_list("phone", flat=True))
    return blocked


# --- Blocklist and opt-out -------------------------------------------------------------

def _finish_open_contacts(tenant: Tenant, e164: str, outcome: str, *, statuses: list[str], now: datetime) -> int:
    """Marks the tenant's open contacts of `e164` done with `outcome` (each announced)."""
    contacts = list(CampaignContact.objects.for_tenant(tenant).filter(phone=e164, status__in=statuses)
                    .select_for_update().select_related("campaign__tenant"))
    for contact in contacts:
        contact.status, contact.outcome, contact.completed_at = CampaignContact.Status.DONE, outcome, now
        contact.save(update_fields=["status", "outcome", "completed_at"])
        contact_announce(contact, contact.campaign)
    return len(contacts)


@transaction.atomic
def blocklist_add(*, tenant: Tenant, phone: str, note: str = "", reason: str = BlockedNumber.Reason.MANUAL,
                  call_id: str = "", now: datetime | None = None) -> tuple[BlockedNumber, bool]:
    """Puts `phone` on the tenant's blocklist (returns (entry, created)); its waiting
    contacts in every campaign of the tenant end `skipped_blocklist` (a call under way
    ends as it ends, and is not repeated)."""
    now = now or timezone.now()
    entry, created = _block(tenant, to_e164(phone), reason=reason, note=note, call_id=call_id)
    _finish_open_contacts(tenant, entry.phone, Outcome.SKIPPED_BLOCKLIST, statuses=[CampaignContact.Status.PENDING],
                          now=now)
    return entry, created


def _block(tenant: Tenant, e164: str, *, reason: str, note: str, call_id: str) -> tuple[BlockedNumber, bool]:
    entry, created = BlockedNumber.objects.get_or_create(
        tenant=tenant, phone=e164, defaults={"reason": reason, "note": note, "call_id": call_id})
    if not created and reason == BlockedNumber.Reason.OPT_OUT and entry.reason != reason:
        entry.reason, entry.call_id = reason, call_id or entry.call_id
        entry.save(update_fields=["reason", "call_id"])
    return entry, created


@transaction.atomic
def opt_out(*, tenant: Tenant, phone: str, call_id: str = "", note: str = "",
            now: datetime | None = None) -> BlockedNumber:
    """The callee wants no more calls ("Bitte rufen Sie mich nicht mehr an"): the number
    goes on the tenant's blocklist and its open contacts of every campaign of the tenant
    end `opted_out`, so that no campaign of the tenant calls it again. The voice agent's
    built-in `opt_out` tool calls this (with the call's id). Returns the entry."""
    now = now or timezone.now()
    entry, _ = _block(tenant, to_e164(phone), reason=BlockedNumber.Reason.OPT_OUT, note=note, call_id=call_id)
    ended = _finish_open_contacts(tenant, entry.phone, Outcome.OPTED_OUT,
                                  statuses=[CampaignContact.Status.PENDING, CampaignContact.Status.CALLING], now=now)
    audit_record(actor=f"system:opt_out{':' + call_id if call_id else ''}", action="campaigns.opt_out",
                 tenant=tenant, object_id=entry.pk, details={"contactsEnded": ended})
    return entry


@transaction.atomic
def blocklist_remove(*, entry: BlockedNumber, by_operator: bool = False) -> None:
    """Takes a number off the blocklist. An opt-out stays unless an operator removes it
    in the admin (with the callee's new consent)."""
    if entry.reason == BlockedNumber.Reason.OPT_OUT and not by_operator:
        raise OptOutKept()
    entry.delete()
