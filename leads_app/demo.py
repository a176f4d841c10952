"""The demo tenant's leads for `seed_demo` (idempotent: one lead per demo phone number)."""
from leads_app.models import Lead
from leads_app.preferred_time import parse
from leads_app.services import lead_create, lead_set_status

DEMO_LEADS = [
    # kind, phone, preferred_at, page_url, status
    (Lead.Kind.CALLBACK, "+491712345678", "tomorrow-am", "http://127.0.0.1:8000/widget/demo", Lead.Status.NEW),
    (Lead.Kind.CALLBACK, "+4915112345678", "+2h", "http://127.0.0.1:8000/widget/demo", Lead.Status.CONTACTED),
    (Lead.Kind.CONTACT, "+49301234567", "asap", "", Lead.Status.QUALIFIED),
    (Lead.Kind.VOICEMAIL, "+49401234567", "", "", Lead.Status.NEW),
]


def seed(tenant):
    for kind, phone, preferred_at, page_url, status in DEMO_LEADS:
        if Lead.objects.for_tenant(tenant).filter(phone=phone).exists():
            continue
        lead = lead_create(tenant=tenant, kind=kind, phone=phone,
                           preferred_time=parse(preferred_at) if preferred_at else None, page_url=page_url)
        lead_set_status(lead=lead, status=status)
