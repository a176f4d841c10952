from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from console.jobs.services import job_enqueue_on_commit
from console.tenants.models import Tenant
from leads_app.models import OPEN_STATUSES, Lead
from leads_app.preferred_time import PreferredTime
from leads_app.serializers import LeadSerializer
from webhooks_app.services import event_publish


def _announce(lead: Lead, event_type: str) -> None:
    """The lead's webhook event, published in the caller's transaction (sent after it)."""
    event_publish(tenant=lead.tenant, event_type=event_type, data=LeadSerializer(lead).data,
                  key=f"{event_type}:{lead.pk}:{lead.updated_at.isoformat()}")


@transaction.atomic
def lead_create(*, tenant: Tenant, kind: str, phone: str, preferred_time: PreferredTime | None = None,
                page_url: str = "", consent_version: str = "") -> Lead:
    """A new lead; `preferred_time` (a parsed token) is resolved now, on the tenant's clock."""
    now = timezone.now()
    lead = Lead.objects.create(
        tenant=tenant,
        kind=kind,
        phone=phone,
        preferred_at=preferred_time.token if preferred_time else "",
        preferred_at_resolved=preferred_time.resolve(now=now, time_zone=tenant.time_zone) if preferred_time else None,
        page_url=page_url,
        consent_version=consent_version,
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
    return first


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
