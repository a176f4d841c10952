"""The e-mail to a tenant's members about a new lead, sent by a job worker (German).

Queued after the lead's commit (`leads_app.services.lead_create`); the job reads the
lead again, so an e-mail never describes a lead that was rolled back or erased. A
failure (SMTP down) is retried with the jobs' backoff."""
from django.conf import settings
from django.core.mail import send_mail

from console.phone import mask
from console.tenants.models import Membership
from leads_app.models import Lead

KIND_DE = {"callback": "Rückrufwunsch", "contact": "Kontaktanfrage"}


def lead_notify(*, lead_id: str) -> int:
    """Sends the notice to every active member with an address; returns how many."""
    lead = Lead.objects.select_related("tenant").filter(pk=lead_id).first()
    if lead is None:
        return 0
    recipients = sorted(set(
        Membership.objects.for_tenant(lead.tenant).filter(user__is_active=True).exclude(user__email="")
        .values_list("user__email", flat=True)
    ))
    if not recipients:
        return 0
    kind = KIND_DE.get(lead.kind, lead.kind)
    lines = [
        "Guten Tag,",
        "",
        f"für {lead.tenant.name} ist ein neuer Lead eingegangen: {kind}.",
        "",
        f"Telefon: {lead.phone}",
        f"Wunschzeit: {lead.preferred_at or 'keine Angabe'}",
        f"Seite: {lead.page_url or 'keine Angabe'}",
        f"Eingegangen: {lead.created_at:%d.%m.%Y %H:%M} UTC",
        "",
        "Sie finden ihn in der Konsole unter „Leads“.",
        "",
        "Ihr Stimmwerk",
    ]
    send_mail(subject=f"Neuer Lead: {kind} ({mask(lead.phone)})", message="\n".join(lines),
              from_email=settings.DEFAULT_FROM_EMAIL, recipient_list=recipients)
    return len(recipients)
