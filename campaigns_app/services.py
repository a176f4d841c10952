"""Writes of campaigns: the campaign and its state, its contacts, the blocklist and
`opt_out`, and the erasure of a number (called by privacy_app); the dialling itself is
campaigns_app/scheduler.py."""
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from calls_app.services import call_fail_undialled
from campaigns_app.contact_rows import ContactRow, RowError
from campaigns_app.errors import CampaignFinished, CampaignStateConflict, OptOutKept, TooManyContacts
from campaigns_app.models import (
    MAX_CONTACTS_PER_CAMPAIGN,
    BlockedNumber,
    Campaign,
    CampaignAttempt,
    CampaignContact,
    Outcome,
)
from campaigns_app.selectors import blocked_among, blocklist_entries_for
from campaigns_app.window import DEFAULT_WINDOW
from console.assistants.models import Assistant
from console.audit.services import audit_record
from console.errors import ValidationFailed
from console.jobs.services import job_enqueue_on_commit
from console.numbers.models import PhoneNumber
from console.phone import InvalidPhoneNumber, to_e164, written_pattern
from console.pseudonyms import pseudonym_for
from console.quotas import quota_take
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
    quota_take(tenant=tenant, name="campaigns")
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
    """The campaign's row locked until commit — its row alone (FOR UPDATE OF): a lock on
    the joined tenant row would make every commit that references the tenant (a call's
    end, booked under the usage counter) wait, a deadlock with a claim holding the
    counter (calls_app.ledger._locked)."""
    return Campaign.objects.select_for_update(of=("self",)).select_related("tenant").get(pk=campaign.pk)


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
    # An erased contact's number is gone; its pseudonym is no business of the receiver.
    event_publish(tenant=campaign.tenant, event_type="campaign.contact.completed",
                  key=f"campaign.contact.completed:{contact.pk}", data={
                      "id": contact.pk, "campaign": campaign.pk, "phone": None if contact.redacted else contact.phone,
                      "outcome": contact.outcome,
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
    blocked = blocked_among(tenant=campaign.tenant, phones={row.phone for row in rows})
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
    if new:
        quota_take(tenant=campaign.tenant, name="contacts", adding=len(new))
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


# --- Blocklist and opt-out -------------------------------------------------------------

def _finish_open_contacts(tenant: Tenant, e164: str, outcome: str, *, statuses: list[str], now: datetime) -> int:
    """Marks the tenant's open contacts of `e164` done with `outcome` (each announced)."""
    contacts = list(CampaignContact.objects.for_tenant(tenant).filter(phone=e164, status__in=statuses)
                    .select_for_update(of=("self",)).select_related("campaign__tenant"))
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
    e164 = to_e164(phone)
    if reason == BlockedNumber.Reason.MANUAL and not blocklist_entries_for(tenant=tenant, e164=e164).exists():
        # A new entry by hand counts against the cap; a callee's objection never does.
        quota_take(tenant=tenant, name="blocklist")
    entry, created = _block(tenant, e164, reason=reason, note=note, call_id=call_id)
    _finish_open_contacts(tenant, e164, Outcome.SKIPPED_BLOCKLIST, statuses=[CampaignContact.Status.PENDING],
                          now=now)
    return entry, created


def _block(tenant: Tenant, e164: str, *, reason: str, note: str, call_id: str) -> tuple[BlockedNumber, bool]:
    """The entry of `e164`, made if there is none. An entry an erasure left under the
    number's pseudonym is that entry: it blocks already, and the number is not written
    back into it (an opt-out still makes it one)."""
    entry = blocklist_entries_for(tenant=tenant, e164=e164).filter(erased_at__isnull=False).first()
    created = False
    if entry is None:
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
    e164 = to_e164(phone)
    entry, _ = _block(tenant, e164, reason=BlockedNumber.Reason.OPT_OUT, note=note, call_id=call_id)
    ended = _finish_open_contacts(tenant, e164, Outcome.OPTED_OUT,
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


# --- Erasure of a number (privacy_app) -------------------------------------------------

@dataclass(frozen=True)
class ErasedNumber:
    """What `number_erase` changed: the ids of the contacts and blocklist entries (for
    the admin's change log) and how many attempts it stopped before their dial."""

    contact_ids: list
    blocklist_ids: list
    attempts_stopped: int


def _kept_consent(contact: CampaignContact, dialled: Collection[str]) -> bool:
    """Whether an erased contact keeps its consent proof: it was dialled (`dialled`: the
    ids of such contacts) under a documented consent, which § 7a UWG requires to be
    kept five years after each use (Art. 17(3)(b) GDPR; docs/privacy.md). Its number is
    the pseudonym then, and the retention job removes the proof when the five years are
    over."""
    return contact.consent_at is not None and contact.pk in dialled


def _number_in_text(e164: str) -> re.Pattern[str]:
    """`console.phone.written_pattern` for Python's `re`, its edges as lookarounds, so
    that replacing the number keeps the characters around it."""
    pattern, head, tail = written_pattern(e164), "(?:^|[^0-9])", "(?:[^0-9]|$)"
    if not (pattern.startswith(head) and pattern.endswith(tail)):
        raise ValueError("console.phone.written_pattern changed its edges")
    return re.compile(f"(?<![0-9]){pattern[len(head):-len(tail)]}(?![0-9])")


@transaction.atomic
def number_erase(*, tenant: Tenant, e164: str, now: datetime | None = None) -> "ErasedNumber":
    """privacy_app's erasure of a number, in its transaction (which has locked the
    number's calls already): the tenant's campaign contacts of the number are
    redacted — the number becomes its pseudonym, name and variables are emptied, and
    the consent too unless it must be kept (`_kept_consent`) —; the open ones are done
    with the outcome `erased` (announced, without a number), and their attempts not
    yet dialled are never dialled (their calls fail unbooked, the minutes released).
    An attempt already dialled ends as its call ends. The number's blocklist entry
    stays as what makes an objection last, under the pseudonym, without its note
    (`erased_at`): the blocklist still matches it (selectors.blocked_among).

    Locks as `opt_out` does: the blocklist's rows of the number, then its contacts."""
    now = now or timezone.now()
    pseudonym = pseudonym_for(tenant=tenant, e164=e164)
    pattern = _number_in_text(e164)
    entries = {entry.phone: entry for entry in blocklist_entries_for(tenant=tenant, e164=e164)
               .select_for_update().order_by("pk")}
    contacts = list(CampaignContact.objects.for_tenant(tenant).filter(phone=e164).select_for_update(of=("self",))
                    .select_related("campaign__tenant").order_by("pk"))
    contact_ids = [contact.pk for contact in contacts]
    # The attempts claimed but not yet dialled: whoever wins this compare-and-set dials
    # (a job worker) or never does (the erasure). A worker that won it finds a pseudonym
    # in the call's number and does not dial either (scheduler._send).
    stopped = list(CampaignAttempt.objects.filter(contact_id__in=contact_ids, state=CampaignAttempt.State.CLAIMED)
                   .select_related("call").order_by("pk"))
    CampaignAttempt.objects.filter(pk__in=[attempt.pk for attempt in stopped],
                                   state=CampaignAttempt.State.CLAIMED).update(
        state=CampaignAttempt.State.ENDED, outcome=Outcome.ERASED, ended_at=now)
    for attempt in stopped:
        if attempt.call is not None:
            call_fail_undialled(call=attempt.call)
    # A dial request was sent (or a worker won it, in which case it may have been).
    dialled = set(CampaignAttempt.objects.filter(contact_id__in=contact_ids, dials__gt=0)
                  .values_list("contact_id", flat=True))
    for contact in contacts:
        contact.phone, contact.name, contact.variables, contact.redacted = pseudonym, "", {}, True
        fields = ["phone", "name", "variables", "redacted"]
        if _kept_consent(contact, dialled):
            contact.consent_source = pattern.sub(pseudonym, contact.consent_source)
            contact.consent_text = pattern.sub(pseudonym, contact.consent_text)
        else:
            contact.consent_source, contact.consent_at, contact.consent_text = "", None, ""
        fields += ["consent_source", "consent_at", "consent_text"]
        if contact.status != CampaignContact.Status.DONE:
            contact.status, contact.outcome, contact.completed_at = CampaignContact.Status.DONE, Outcome.ERASED, now
            fields += ["status", "outcome", "completed_at"]
            contact.save(update_fields=fields)
            contact_announce(contact, contact.campaign)
        else:
            contact.save(update_fields=fields)
    return ErasedNumber(contact_ids=contact_ids,
                        blocklist_ids=_blocklist_erase(entries.get(e164), entries.get(pseudonym), pseudonym, now),
                        attempts_stopped=len(stopped))


def _blocklist_erase(entry: BlockedNumber | None, erased: BlockedNumber | None, pseudonym: str,
                     now: datetime) -> list[str]:
    """The number's entry goes under its pseudonym. If one is there already (the number
    came onto the list again at the moment of an earlier erasure), the two become one,
    an opt-out winning."""
    if entry is None:
        return []
    if erased is not None:
        if entry.reason == BlockedNumber.Reason.OPT_OUT and erased.reason != entry.reason:
            erased.reason, erased.call_id = entry.reason, entry.call_id or erased.call_id
            erased.save(update_fields=["reason", "call_id"])
        merged = entry.pk
        entry.delete()
        return [merged, erased.pk]
    entry.phone, entry.note, entry.erased_at = pseudonym, "", now
    entry.save(update_fields=["phone", "note", "erased_at"])
    return [entry.pk]
