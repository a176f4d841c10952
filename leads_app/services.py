from django.conf import settings
from django.db import transaction
from django.utils import timezone

from console.jobs.services import job_enqueue_on_commit
from leads_app.models import Lead
from leads_app.serializers import LeadSerializer
from webhooks_app.services import event_publish


def _announce(lead, event_type):
    """The lead's webhook event, published in the caller's transaction (sent after it)."""
    event_publish(tenant=lead.tenant, event_type=event_type, data=LeadSerializer(lead).data,
                  key=f"{event_type}:{lead.pk}:{lead.updated_at.isoformat()}")


@transaction.atomic
def lead_create(*, tenant, kind, phone, preferred_time=None, page_url="", consent_version=""):
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


@transaction.atomic
def lead_set_status(*, lead, status):
    if lead.status != status:
        lead.status = status
        lead.save(update_fields=["status", "updated_at"])
        _announce(lead, "lead.updated")
    return lead


@transaction.atomic
def leads_set_status(*, leads, status):
    """Bulk change (admin action); returns how many leads changed."""
    changing = list(leads.exclude(status=status).select_related("tenant"))
    for lead in changing:
        lead_set_status(lead=lead, status=status)
    return len(changing)
