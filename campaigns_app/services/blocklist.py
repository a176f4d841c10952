"""The tenant's blocklist and the callee's opt-out: a number on it ends its open
contacts in every campaign of the tenant."""
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from campaigns_app.errors import OptOutKept
from campaigns_app.models import BlockedNumber, CampaignContact, Outcome
from campaigns_app.selectors import blocklist_entries_for
from campaigns_app.services.lifecycle import contact_announce
from console.audit.services import audit_record
from console.phone import to_e164
from console.quotas import quota_take
from console.tenants.models import Tenant


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
