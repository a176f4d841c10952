"""Reads of campaigns: the counts by outcome, pages of contacts, the results export,
the blocklist's matches, and what a privacy export holds of one number."""
from collections.abc import Collection, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from django.db.models import Count, Prefetch, QuerySet

from campaigns_app.models import BlockedNumber, Campaign, CampaignAttempt, CampaignContact, Outcome
from console.pagination import after_cursor, page_of
from console.pseudonyms import pseudonym_for
from console.tenants.models import Tenant

COUNT_KEYS = ("total", "pending", "calling", "done", *Outcome.values)


def _empty() -> dict[str, int]:
    return dict.fromkeys(COUNT_KEYS, 0)


def counts_for(campaign_ids: Collection[str]) -> dict[str, dict[str, int]]:
    """{campaign id: counts} in one grouped query: `total`; `pending` (waiting for a
    first or further attempt), `calling`, `done`; and per outcome the contacts done
    with it (reached, voicemail, no_answer, busy, failed, opted_out, skipped_*)."""
    counts = {campaign_id: _empty() for campaign_id in campaign_ids}
    rows = (CampaignContact.objects.filter(campaign_id__in=list(campaign_ids)).order_by()
            .values_list("campaign_id", "status", "outcome").annotate(n=Count("id")))
    for campaign_id, status, outcome, n in rows:
        entry = counts[campaign_id]
        entry["total"] += n
        entry[status] += n
        if status == CampaignContact.Status.DONE and outcome:
            entry[outcome] += n
    return counts


def counts_of(campaign: Campaign) -> dict[str, int]:
    return counts_for([campaign.pk])[campaign.pk]


def progress_percent(counts: Mapping[str, int]) -> int:
    return (100 * counts["done"] // counts["total"]) if counts["total"] else 0


def contact_page(*, campaign: Campaign, limit: int, cursor: str | None = None, status: str | None = None,
                 outcome: str | None = None) -> tuple[list[CampaignContact], str | None]:
    """A page of the campaign's contacts, newest first, each with its attempts."""
    contacts = CampaignContact.objects.for_tenant(campaign.tenant).filter(campaign=campaign)
    if status:
        contacts = contacts.filter(status=status)
    if outcome:
        contacts = contacts.filter(outcome=outcome)
    scope = f"campaign-contacts:{campaign.pk}"
    contacts = after_cursor(contacts, tenant=campaign.tenant, scope=scope, cursor=cursor)
    rows = list(contacts.prefetch_related("attempt_set")[:limit + 1])
    return page_of(rows, tenant=campaign.tenant, scope=scope, limit=limit,
                   position=lambda contact: (contact.created_at, contact.pk))


EXPORT_HEADER = ("id", "row", "phone", "name", "b2b", "status", "outcome", "attempts", "calls", "lastAttemptAt",
                 "completedAt", "consentSource", "consentAt", "consentText", "variables")


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def export_rows(campaign: Campaign) -> Iterator[tuple[Any, ...]]:
    """The cells of the results export, one row per contact in upload order (streamed)."""
    calls: dict[str, list[str]] = {}
    for contact_id, call_id in (CampaignAttempt.objects.filter(campaign=campaign).order_by("contact_id", "number")
                                .values_list("contact_id", "call_id")):
        if call_id:
            calls.setdefault(contact_id, []).append(call_id)
    contacts = CampaignContact.objects.filter(campaign=campaign).order_by("row", "created_at", "id")
    for contact in contacts.iterator(chunk_size=2000):
        yield (contact.pk, contact.row, contact.phone, contact.name, "true" if contact.b2b else "false",
               contact.status, contact.outcome, contact.attempts, " ".join(calls.get(contact.pk, ())),
               _iso(contact.last_attempt_at), _iso(contact.completed_at), contact.consent_source,
               _iso(contact.consent_at), contact.consent_text,
               " ".join(f"{name}={value}" for name, value in contact.variables.items()))


def contact_variables_of_call(*, call_id: str) -> dict[str, str]:
    """The variables of the campaign contact that the call `call_id` dials (the other
    columns of its upload, e.g. `firstName`): the scripts of the call — its opening,
    its voicemail — are filled with them. {} for a call that is no campaign's or a
    contact whose data was erased."""
    variables = (CampaignContact.objects.filter(attempt_set__call_id=call_id, redacted=False)
                 .values_list("variables", flat=True).first())
    return {str(name): str(value) for name, value in (variables or {}).items()}


def is_campaign_call(*, call_id: str) -> bool:
    """Whether the call `call_id` is a campaign's attempt."""
    return bool(call_id) and CampaignAttempt.objects.filter(call_id=call_id).exists()


# --- The blocklist ---------------------------------------------------------------------

def blocklist_keys(*, tenant: Tenant, e164: str) -> list[str]:
    """What a blocklist entry of `e164` holds as its `phone`: the number, or its pseudonym
    once the number was erased (privacy_app)."""
    return [e164, pseudonym_for(tenant=tenant, e164=e164)]


def blocklist_entries_for(*, tenant: Tenant, e164: str) -> QuerySet[BlockedNumber]:
    """The tenant's blocklist entries of the number, erased ones included (at most one
    of each)."""
    return BlockedNumber.objects.for_tenant(tenant).filter(phone__in=blocklist_keys(tenant=tenant, e164=e164))


def blocked_among(*, tenant: Tenant, phones: Iterable[str]) -> set[str]:
    """The numbers among `phones` (E.164) that no campaign of the tenant may call: on its
    blocklist by number, or by the pseudonym an erasure left in the number's place. The
    pseudonyms are computed only when the tenant has erased entries (an upload of
    50,000 contacts would compute 50,000 keyed hashes for nothing)."""
    phones, blocked = list(set(phones)), set()
    entries = BlockedNumber.objects.for_tenant(tenant)
    for start in range(0, len(phones), 500):
        blocked.update(entries.filter(phone__in=phones[start:start + 500]).values_list("phone", flat=True))
    if entries.filter(erased_at__isnull=False).exists():
        by_pseudonym = {pseudonym_for(tenant=tenant, e164=phone): phone for phone in phones if phone not in blocked}
        keys = list(by_pseudonym)
        for start in range(0, len(keys), 500):
            blocked.update(by_pseudonym[key] for key in entries.filter(
                phone__in=keys[start:start + 500], erased_at__isnull=False).values_list("phone", flat=True))
    return blocked


# --- Privacy (privacy_app's exports) ---------------------------------------------------

def contacts_of_number(*, tenant: Tenant, e164: str) -> QuerySet[CampaignContact]:
    """The tenant's campaign contacts of the number, and those an erasure of it left
    under its pseudonym (with a consent proof kept, docs/privacy.md)."""
    return CampaignContact.objects.for_tenant(tenant).filter(phone__in=blocklist_keys(tenant=tenant, e164=e164))


def privacy_export(*, tenant: Tenant, e164: str) -> dict[str, Any]:
    """What the tenant's campaigns hold of the number, for privacy_app's export (Art. 15):
    `{"campaignContacts": [...], "blocklist": [...]}`, oldest first, JSON-safe."""
    contacts = (contacts_of_number(tenant=tenant, e164=e164).select_related("campaign")
                .prefetch_related(Prefetch("attempt_set", queryset=CampaignAttempt.objects.order_by("number")))
                .order_by("created_at", "id"))
    return {
        "campaignContacts": [{
            "id": contact.pk,
            "campaign": {"id": contact.campaign_id, "name": contact.campaign.name,
                         "purpose": contact.campaign.purpose},
            "phone": contact.phone, "name": contact.name, "variables": contact.variables, "b2b": contact.b2b,
            "consent": {"source": contact.consent_source, "at": _iso(contact.consent_at),
                        "text": contact.consent_text},
            "status": contact.status, "outcome": contact.outcome or None, "attempts": [{
                "id": attempt.pk, "number": attempt.number, "call": attempt.call_id, "state": attempt.state,
                "outcome": attempt.outcome or None, "answeredBy": attempt.answered_by or None,
                "claimedAt": _iso(attempt.claimed_at), "dialledAt": _iso(attempt.dialled_at),
                "endedAt": _iso(attempt.ended_at),
            } for attempt in contact.attempt_set.all()],
            "createdAt": _iso(contact.created_at), "lastAttemptAt": _iso(contact.last_attempt_at),
            "completedAt": _iso(contact.completed_at), "redacted": contact.redacted,
        } for contact in contacts],
        "blocklist": [{
            "id": entry.pk, "reason": entry.reason, "note": entry.note, "call": entry.call_id or None,
            "createdAt": _iso(entry.created_at), "erasedAt": _iso(entry.erased_at),
        } for entry in blocklist_entries_for(tenant=tenant, e164=e164).order_by("created_at", "id")],
    }


def privacy_export_size(*, tenant: Tenant, e164: str) -> int:
    """The rows `privacy_export` reads (contacts; their attempts are few)."""
    return contacts_of_number(tenant=tenant, e164=e164).count()
