"""The SIP agent's reads and writes of the `sip` carriers (calls_app/kinds/sip.py): the
accounts it registers and answers for, and the registration state it reports."""
from collections.abc import Collection
from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from calls_app.kinds.sip import DIAL_PREFIX, NAME, RING_PREFIX, SipAccount, sip_account
from calls_app.models import Call, Carrier, CarrierEvent, SipRegistration, WarmTransfer

STATES = ("registered", "registering", "failing", "static")


def sip_accounts() -> list[SipAccount]:
    """Every `sip` carrier's account (a carrier whose credentials cannot be opened is left out)."""
    accounts = []
    for carrier in Carrier.objects.filter(kind=NAME).order_by("pk"):
        try:
            accounts.append(sip_account(carrier))
        except ValueError:
            continue
    return accounts


def sip_registration_note(*, carrier_id: str, state: str, reason: str = "") -> None:
    """Stores what the agent knows of the carrier's registration now (a carrier deleted
    meanwhile is skipped)."""
    assert state in STATES
    if not Carrier.objects.filter(pk=carrier_id).exists():
        return
    SipRegistration.objects.update_or_create(carrier_id=carrier_id,
                                             defaults={"state": state, "reason": reason[:200]})


# --- Outbound calls: dialled by the SIP agent, exactly once ---------------------------------

@dataclass(frozen=True)
class SipDial:
    call_id: str
    carrier_id: str
    carrier_call_id: str
    to_e164: str
    from_e164: str


def sip_dials_due(*, within_sec: int) -> list[SipDial]:
    """The outbound calls of sip carriers that wait for their INVITE: queued, handed to
    the adapter (they carry its id) less than `within_sec` ago, not claimed yet (an
    older one is the sweep's: its caller gave up long ago)."""
    since = timezone.now() - timedelta(seconds=within_sec)
    claimed = CarrierEvent.objects.filter(type=DIAL_EVENT, carrier_call_id=OuterRef("carrier_call_id"))
    rows = (Call.objects.filter(carrier__kind=NAME, direction=Call.Direction.OUTBOUND, status=Call.Status.QUEUED,
                                carrier_call_id__startswith=DIAL_PREFIX, created_at__gte=since)
            .annotate(claimed=Exists(claimed)).filter(claimed=False)
            .values_list("pk", "carrier_id", "carrier_call_id", "to_e164", "from_e164")[:50])
    return [SipDial(*row) for row in rows]


DIAL_EVENT = "sip.dial"


def sip_dial_claim(*, dial: SipDial) -> bool:
    """Claims the dial for this agent: True once per call, ever (a unique carrier event),
    so an INVITE is never sent twice — not by a second agent, not after a restart; a
    dial claimed by an agent that died is the sweep's."""
    try:
        with transaction.atomic():
            CarrierEvent.objects.create(carrier_id=dial.carrier_id, event_id=f"{DIAL_EVENT}:{dial.call_id}",
                                        type=DIAL_EVENT, carrier_call_id=dial.carrier_call_id,
                                        occurred_at=timezone.now(), data={}, state=CarrierEvent.State.APPLIED)
    except IntegrityError:
        return False
    return True


# --- Warm hand-overs: rung by the SIP agent that holds the caller's call -------------------------

@dataclass(frozen=True)
class SipRing:
    """A warm hand-over's ring to place: the person's number and ours to show them."""

    transfer_id: int
    call_id: str
    carrier_id: str
    target: str
    from_e164: str


def sip_rings_due(*, call_ids: Collection[str]) -> list[SipRing]:
    """The warm hand-overs of the calls `call_ids` (the agent's own) that ring: the
    tool handed them to the adapter (`sip-warm-<transfer>`) and nobody decided them."""
    rows = (WarmTransfer.objects.filter(call_id__in=list(call_ids), status=WarmTransfer.Status.RINGING,
                                        leg_id__startswith=RING_PREFIX, call__carrier__kind=NAME)
            .values_list("pk", "call_id", "call__carrier_id", "target", "call__direction", "call__to_e164",
                         "call__from_e164")[:50])
    return [SipRing(pk, call_id, carrier_id, target, to_e164 if direction == Call.Direction.INBOUND else from_e164)
            for pk, call_id, carrier_id, target, direction, to_e164, from_e164 in rows]
