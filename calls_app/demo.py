"""Demo calls for `seed_demo`: realistic calls of the sim carrier, played through
the signed webhook. Idempotent: the event ids are fixed, and a tenant that has sim
calls already gets no new ones."""
from datetime import timedelta

from django.utils import timezone

from calls_app import sim
from calls_app.carriers import SIM_CARRIER_ID
from calls_app.errors import MinuteCapReached
from calls_app.models import Call
from console.numbers.models import PhoneNumber

INBOUND = [("+4917612345678", 95, 3), ("+4915112345670", 212, 2), ("+4916098765432", 48, 1)]
OUTBOUND_TO = "+4917698765430"


def seed(tenant):
    if Call.objects.for_tenant(tenant).filter(carrier_id=SIM_CARRIER_ID).exists():
        return
    number = PhoneNumber.objects.for_tenant(tenant).order_by("e164").first()
    now = timezone.now()
    if number is not None:
        for index, (caller, seconds, hours_ago) in enumerate(INBOUND):
            sim.play_inbound(
                number=number, caller=caller, seconds=seconds, started=now - timedelta(hours=hours_ago),
                event_prefix=f"demo-{tenant.slug}-in{index}",
            )
    try:
        sim.play_outbound(tenant=tenant, to=OUTBOUND_TO, seconds=130, started=now - timedelta(minutes=20),
                          event_prefix=f"demo-{tenant.slug}-out0")
    except MinuteCapReached:
        pass  # a demo tenant without minutes left simply has no outbound demo call
