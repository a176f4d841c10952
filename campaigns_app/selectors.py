"""Reads of campaigns: the counts by outcome, pages of contacts, the results export."""
from collections.abc import Collection, Iterator, Mapping
from datetime import datetime
from typing import Any

from django.db.models import Count

from campaigns_app.models import Campaign, CampaignAttempt, CampaignContact, Outcome
from console.pagination import after_cursor, page_of

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


def running_campaign_ids() -> list[str]:
    return list(Campaign.objects.filter(state=Campaign.State.RUNNING).values_list("pk", flat=True))
