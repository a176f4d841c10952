from datetime import UTC, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone
from rest_framework import serializers

from console.jobs.services import job_enqueue_on_commit
from console.quotas import quota_take
from console.tenants.models import Tenant
from leads_app.models import OPEN_STATUSES, Lead
from leads_app.preferred_time import PreferredTime
from leads_app.serializers import LeadSerializer
from webhooks_app.services import event_publish


def _announce(lead: Lead, event_type: str) -> None:
    """The lead's webhook event, published in the caller's transaction (sent after it):
    the lead as the API shows it, with how often its number posted again (docs/api.md)."""
    # In UTC, as the API writes times, also when an admin request activated the tenant's zone.
    with timezone.override(UTC):
        data = {**LeadSerializer(lead).data, "repeat_count": lead.repeat_count,
                "repeated_at": serializers.DateTimeField().to_representation(lead.repeated_at)
                if lead.repeated_at else None}
    event_publish(tenant=lead.tenant, event_type=event_type, data=data,
                  key=f"{event_type}:{lead.pk}:{lead.updated_at.isoformat()}")


@transaction.atomic
def lead_create(*, tenant: Tenant, kind: str, phone: str, preferred_time: PreferredTime | None = None,
                page_url: str = "", consent_version: str = "", notes: str = "") -> Lead:
    """A new lead; `preferred_time` (a parsed token) is resolved now, on the tenant's
    clock. 409 `tenant_limit_reached` past TENANT_MAX_LEADS."""
    quota_take(tenant=tenant, name="leads")
    now = timezone.now()
    lead = Lead.objects.create(
        tenant=tenant,
        kind=kind,
        phone=phone,
        preferred_at=preferred_time.token if preferred_time else "",
        preferred_at_resolved=preferred_time.resolve(now=now, time_zone=tenant.time_zone) if preferred_time else None,
        page_url=page_url,
        consent_version=consent_version,
        notes=notes,
    )
    _announce(lead, "lead.created")
    if settings.LEADS_NOTIFY_BY_EMAIL:
        job_enqueue_on_commit("leads_app.notifications.lead_notify", kwargs={"lead_id": lead.pk})
    return lead


# A number that posts again within this time while its lead is still open is folded
# into that lead (its counter goes up) instead of a new row (docs/api.md).
DUPLICATE_WINDOW = timedelta(hours=24)


@transaction.atomic
def lead_receive(*, tenant: Tenant, kind: str, phone: str, preferred_time: PreferredTime | None = None,
                 page_url: str = "", consent_version: str = "") -> Lead:
    """A public post: the open lead of the same number from the last 24 hours with its
    repeat counter raised (and the newer preferred time), or a new lead.

    Two posts of one number in the same instant may both be kept: no lock is taken
    for the check (the public post is rate-limited and must stay cheap)."""
    now = timezone.now()
    first = (Lead.objects.for_tenant(tenant).filter(phone=phone, status__in=OPEN_STATUSES,
                                                   created_at__gte=now - DUPLICATE_WINDOW)
             .order_by("created_at", "id").first())
    if first is None:
        return lead_create(tenant=tenant, kind=kind, phone=phone, preferred_time=preferred_time, page_url=page_url,
                           consent_version=consent_version)
    changes: dict[str, Any] = {"repeat_count": F("repeat_count") + 1, "repeated_at": now, "updated_at": now}
    if preferred_time:
        changes["preferred_at"] = preferred_time.token
        changes["preferred_at_resolved"] = preferred_time.resolve(now=now, time_zone=tenant.time_zone)
    Lead.objects.filter(pk=first.pk).update(**changes)
    first.refresh_from_db()
    # The receivers learn that the number asked again (and its newer wish).
    _announce(first, "lead.updated")
    return first


@transaction.atomic
def lead_callback_revise(*, lead: Lead, phone: str, preferred_time: PreferredTime | None = None,
                         notes: str = "") -> Lead:
    """A callback request corrected while it is being taken (an assistant's second
    create_callback in the same call: the caller gave another number or time): the
    lead's number, preferred time and notes, announced as `lead.updated`."""
    now = timezone.now()
    lead.phone = phone
    lead.preferred_at = preferred_time.token if preferred_time else ""
    lead.preferred_at_resolved = (preferred_time.resolve(now=now, time_zone=lead.tenant.time_zone)
                                  if preferred_time else None)
    lead.notes = notes
    lead.save(update_fields=["phone", "preferred_at", "preferred_at_resolved", "notes", "updated_at"])
    _announce(lead, "lead.updated")
    return lead


@transaction.atomic
def lead_set_status(*, lead: Lead, status: str) -> Lead:
    if lead.status != status:
        lead.status = status
        lead.save(update_fields=["status", "updated_at"])
        _announce(lead, "lead.updated")
    return lead


@transaction.atomic
def leads_set_status(*, leads: QuerySet[Lead], status: str) -> int:
    """Bulk change (admin action); returns how many leads changed."""
    changing = list(leads.exclude(status=status).select_related("tenant"))
    for lead in changing:
        lead_set_status(lead=lead, status=status)
    return len(changing)


@transaction.atomic
def lead_update(*, lead: Lead, status: str | None = None, notes: str | None = None) -> Lead:
    """The console's change of a lead (the admin's change form): its status and the
    operator's notes, compared with the stored row. A new status is announced
    (`lead.updated`) like the API's and the bulk actions'; notes are the console's
    own (not part of the API's lead), so a change of notes alone announces nothing."""
    stored = Lead.objects.select_for_update().select_related("tenant").get(pk=lead.pk)
    changed = []
    if notes is not None and notes != stored.notes:
        stored.notes = notes
        changed.append("notes")
    if status is not None and status != stored.status:
        stored.status = status
        changed.append("status")
    if changed:
        stored.save(update_fields=[*changed, "updated_at"])
        if "status" in changed:
            _announce(stored, "lead.updated")
    return stored
