"""The SIP agent's reads and writes of the `sip` carriers (calls_app/kinds/sip.py): the
accounts it registers and answers for, and the registration state it reports."""
from calls_app.kinds.sip import NAME, SipAccount, sip_account
from calls_app.models import Carrier, SipRegistration

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
