from django.db import transaction
from django.utils import timezone

from leads_app.models import Lead


@transaction.atomic
def lead_create(*, tenant, kind, phone, preferred_time=None, page_url="", consent_version=""):
    """A new lead; `preferred_time` (a parsed token) is resolved now, on the tenant's clock."""
    now = timezone.now()
    return Lead.objects.create(
        tenant=tenant,
        kind=kind,
        phone=phone,
        preferred_at=preferred_time.token if preferred_time else "",
        preferred_at_resolved=preferred_time.resolve(now=now, time_zone=tenant.time_zone) if preferred_time else None,
        page_url=page_url,
        consent_version=consent_version,
    )


@transaction.atomic
def lead_set_status(*, lead, status):
    if lead.status != status:
        lead.status = status
        lead.save(update_fields=["status", "updated_at"])
    return lead


@transaction.atomic
def leads_set_status(*, leads, status):
    """Bulk change (admin action); returns how many leads changed."""
    return leads.exclude(status=status).update(status=status, updated_at=timezone.now())
