"""Every carrier adapter is a `CarrierAdapter` (calls_app.carrier_protocol): mypy checks
the signatures of the ones listed here (make test runs it over the tests), this test
that each declares its capabilities and takes the dial's keywords."""
import inspect

import pytest

from calls_app.carrier_protocol import Capabilities, CarrierAdapter
from calls_app.carriers import SimCarrierAdapter
from calls_app.kinds import KINDS
from calls_app.kinds.sip import SipCarrierAdapter
from calls_app.kinds.twilio import TwilioCarrierAdapter
from tests.campaigns_app.fake_carrier import ForgetfulCarrierAdapter, KeyedCarrierAdapter, RestCarrierAdapter

ADAPTERS: tuple[type[CarrierAdapter], ...] = (SimCarrierAdapter, TwilioCarrierAdapter, SipCarrierAdapter,
                                              KeyedCarrierAdapter, ForgetfulCarrierAdapter, RestCarrierAdapter)


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda adapter: adapter.__name__)
def test_an_adapter_declares_its_capabilities_and_takes_the_dials_keywords(adapter):
    assert isinstance(adapter.capabilities, Capabilities)
    assert {"call", "options"} <= inspect.signature(adapter.dial).parameters.keys()
    assert {"carrier_call_id", "target"} <= inspect.signature(adapter.transfer).parameters.keys()
    assert inspect.signature(adapter.machine_answer).parameters["message"].default == ""
    assert "carrier_call_id" in inspect.signature(adapter.hang_up).parameters


def test_every_kinds_adapter_is_one_of_the_checked():
    assert {kind.adapter for kind in KINDS.values() if kind.adapter is not None} <= set(ADAPTERS)
