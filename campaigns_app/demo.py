"""A demo campaign for `seed_demo`: a draft reminder round with three contacts (one of
them on the blocklist), so that the console shows a campaign without calling anyone.
Idempotent: a tenant with campaigns gets none."""
from django.utils import timezone

from campaigns_app import services
from campaigns_app.contact_rows import from_json
from campaigns_app.models import Campaign
from console.numbers.models import PhoneNumber

CONTACTS = [
    {"phone": "+4917611122233", "name": "Jürgen Müller", "variables": {"firstName": "Jürgen", "date": "3. Dezember",
                                                                       "time": "10:30"}},
    {"phone": "+4917644455566", "name": "Björn Weiß", "variables": {"firstName": "Björn", "date": "4. Dezember",
                                                                    "time": "14:00"}},
    {"phone": "+4917677788899", "name": "Greta Schäfer", "variables": {"firstName": "Greta", "date": "5. Dezember",
                                                                       "time": "09:15"}},
]


def seed(tenant):
    if Campaign.objects.for_tenant(tenant).exists() or not PhoneNumber.objects.for_tenant(tenant).exists():
        return
    now = timezone.now()
    services.blocklist_add(tenant=tenant, phone=CONTACTS[2]["phone"], note="Demo: möchte keine Anrufe")
    campaign = services.campaign_create(tenant=tenant, name="Terminerinnerung Dezember", purpose="service",
                                        voicemail="leave_message")
    rows, _ = from_json(CONTACTS, time_zone=tenant.time_zone, now=now)
    services.contacts_add(campaign=campaign, rows=rows, now=now)
