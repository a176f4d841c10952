"""The erasure of a number from the tenant's campaigns (privacy_app calls it, in its
transaction): contacts redacted, attempts not yet dialled stopped, the blocklist entry
kept under the number's pseudonym."""
import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from calls_app.services import call_fail_undialled
from campaigns_app.models import BlockedNumber, CampaignAttempt, CampaignContact, Outcome
from campaigns_app.selectors import blocklist_entries_for
from campaigns_app.services.lifecycle import contact_announce
from console.phone import written_pattern
from console.pseudonyms import pseudonym_for
from console.tenants.models import Tenant


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
