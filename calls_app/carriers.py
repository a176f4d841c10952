"""Carrier adapters: how the runtime dials out through a carrier.

A carrier (calls_app.Carrier) posts signed events to the webhook; an adapter is the
other direction. `VOICE_CARRIER_ADAPTERS` maps carrier ids to adapter classes;
`VOICE_OUTBOUND_CARRIER` (default `sim`) is the one outbound calls use.
"""
import secrets
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils.module_loading import import_string

from calls_app.errors import CarrierUnavailable
from calls_app.models import Call, Carrier, SimDial
from calls_app.signing import new_nonce

if TYPE_CHECKING:  # dialing imports this module
    from calls_app.dialing import DialOptions

SIM_CARRIER_ID = "sim"
SIM_CALLER_ID = "+493012345670"


class CarrierError(Exception):
    """Raised by an adapter when the carrier refuses or cannot be reached."""


class SimCarrierAdapter:
    """The built-in carrier of development and tests: records each dial, calls nobody.

    A whole call is played only when asked (`calls_app.sim.play_call`,
    `manage.py simulate_call`, `seed_demo`)."""

    id = SIM_CARRIER_ID
    name = "Simulated carrier (development and tests)"
    # Takes calls_app.dialing.DialOptions, and places one call per call whatever is
    # sent again (its form of honouring the idempotency key).
    dial_options = True
    idempotent_dials = True

    def dial(self, *, call: Call, max_seconds: int, options: "DialOptions | None" = None) -> str:
        if options is not None and options.repeat:
            placed = SimDial.objects.filter(call=call).values_list("carrier_call_id", flat=True).first()
            if placed:
                return placed
        carrier_call_id = f"SIM{secrets.token_hex(12)}"
        SimDial.objects.create(
            call=call, carrier_call_id=carrier_call_id, from_e164=call.from_e164, to_e164=call.to_e164,
            max_seconds=max_seconds,
        )
        return carrier_call_id

    @classmethod
    def probe(cls):
        return {"id": cls.id, "name": cls.name, "usableNow": True}


# Carriers of these kinds dial through the adapter of their kind, made with the carrier.
KIND_ADAPTERS = {Carrier.Kind.TWILIO: "calls_app.twilio.TwilioCarrierAdapter"}


def adapter_for(carrier_id):
    path = settings.VOICE_CARRIER_ADAPTERS.get(carrier_id)
    if path is not None:
        return import_string(path)()
    carrier = Carrier.objects.filter(pk=carrier_id).first()
    if carrier is not None and carrier.kind in KIND_ADAPTERS:
        return import_string(KIND_ADAPTERS[carrier.kind])(carrier)
    raise CarrierUnavailable(f"No outbound adapter is configured for carrier '{carrier_id}'.")


def outbound_carrier():
    """The Carrier row outbound calls go through; the sim carrier is created on first use."""
    carrier_id = settings.VOICE_OUTBOUND_CARRIER
    if carrier_id == SIM_CARRIER_ID:
        return sim_carrier()
    carrier = Carrier.objects.filter(pk=carrier_id).first()
    if carrier is None:
        raise CarrierUnavailable(f"The outbound carrier '{carrier_id}' does not exist; create it with create_carrier.")
    return carrier


def sim_carrier():
    carrier, _ = Carrier.objects.get_or_create(
        pk=SIM_CARRIER_ID,
        defaults={"name": SimCarrierAdapter.name, "secret_nonce": new_nonce(), "caller_id": SIM_CALLER_ID},
    )
    return carrier
