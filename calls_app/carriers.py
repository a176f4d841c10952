"""The runtime's way to a carrier's adapter (calls_app/kinds/base.py, `CarrierAdapter`).

A carrier dials through the adapter of its kind (calls_app/kinds), made with the
carrier; `VOICE_CARRIER_ADAPTERS` maps carrier ids to adapter classes that take its
place (the built-in `sim` carrier, and the tests' fake carriers).
`VOICE_OUTBOUND_CARRIER` (default `sim`) is the one outbound calls use.
"""
import secrets

from django.conf import settings
from django.utils.module_loading import import_string

from calls_app.carrier_protocol import (  # noqa: F401 (the names calls_app.carriers has always offered)
    Capabilities,
    CarrierAdapter,
    CarrierError,
    DialOptions,
    DialOutcomeUnknown,
    Probe,
)
from calls_app.errors import CarrierUnavailable
from calls_app.kinds import KINDS
from calls_app.kinds.base import AdapterBase
from calls_app.models import Call, Carrier, SimDial
from calls_app.signing import new_nonce

SIM_CARRIER_ID = "sim"
SIM_CALLER_ID = "+493012345670"


class SimCarrierAdapter(AdapterBase):
    """The built-in carrier of development and tests: records each dial, calls nobody.

    A whole call is played only when asked (`calls_app.sim.play_call`,
    `manage.py simulate_call`, `seed_demo`). It places one call per call whatever is
    sent again (its form of honouring the idempotency key)."""

    id = SIM_CARRIER_ID
    name = "Simulierter Telefonieanbieter (Entwicklung und Tests)"
    capabilities = Capabilities(idempotent_dials=True)

    def dial(self, *, call: Call, options: DialOptions) -> str:
        if options.repeat:
            placed = SimDial.objects.filter(call=call).values_list("carrier_call_id", flat=True).first()
            if placed:
                return placed
        carrier_call_id = f"SIM{secrets.token_hex(12)}"
        SimDial.objects.create(
            call=call, carrier_call_id=carrier_call_id, from_e164=call.from_e164, to_e164=call.to_e164,
            max_seconds=call.max_seconds or 0,
        )
        return carrier_call_id

    @classmethod
    def status(cls) -> dict[str, object]:
        """Its line of /health's carriers."""
        return {"id": cls.id, "name": cls.name, "usableNow": True}


def adapter_for(carrier_id: str) -> CarrierAdapter:
    path = settings.VOICE_CARRIER_ADAPTERS.get(carrier_id)
    if path is not None:
        adapter: CarrierAdapter = import_string(path)()
        return adapter
    carrier = Carrier.objects.filter(pk=carrier_id).first()
    kind = KINDS.get(carrier.kind) if carrier is not None else None
    if kind is None or kind.adapter is None:
        raise CarrierUnavailable(f"No outbound adapter is configured for carrier '{carrier_id}'.")
    return kind.adapter(carrier)


def outbound_carrier() -> Carrier:
    """The Carrier row outbound calls go through; the sim carrier is created on first use."""
    carrier_id = settings.VOICE_OUTBOUND_CARRIER
    if carrier_id == SIM_CARRIER_ID:
        return sim_carrier()
    carrier = Carrier.objects.filter(pk=carrier_id).first()
    if carrier is None:
        raise CarrierUnavailable(f"The outbound carrier '{carrier_id}' does not exist; create it with create_carrier.")
    return carrier


def sim_carrier() -> Carrier:
    carrier, _ = Carrier.objects.get_or_create(
        pk=SIM_CARRIER_ID,
        defaults={"name": SimCarrierAdapter.name, "secret_nonce": new_nonce(), "caller_id": SIM_CALLER_ID},
    )
    return carrier
