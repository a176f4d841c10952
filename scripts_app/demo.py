"""The demo tenant's script overrides (part of `seed_demo`): one clean text and one
that shows the linter's findings in the admin. Existing overrides are left as the
operator edited them."""
from scripts_app.models import ScriptOverride

DEMO_OVERRIDES = {
    "inbound.greeting": "Guten Tag, Sie sind mit der Demo Praxis verbunden. Wie kann ich Ihnen helfen?",
    "callback.offer": "Moechten Sie, dass wir Sie zurueckrufen? Nennen Sie uns einfach Ihre Nummer.",
}


def seed(tenant):
    for touchpoint_id, text in DEMO_OVERRIDES.items():
        ScriptOverride.objects.get_or_create(tenant=tenant, touchpoint_id=touchpoint_id, defaults={"text": text})
