"""Every carrier adapter is a `CarrierAdapter` (calls_app.carrier_protocol): mypy checks
the signatures of the ones listed here (make test runs it over the tests), this test
that each declares what calls_app.dialing reads of it and takes the dial's keywords."""
import inspect

import pytest

from calls_app.carrier_protocol import CallControl, CarrierAdapter
from calls_app.carriers import SimCarrierAdapter
from calls_app.twilio import TwilioCarrierAdapter
from tests.campaigns_app.fake_carrier import ForgetfulCarrierAdapter, KeyedCarrierAdapter, RestCarrierAdapter

ADAPTERS: tuple[type[CarrierAdapter], ...] = (SimCarrierAdapter, TwilioCarrierAdapter, KeyedCarrierAdapter,
                                              ForgetfulCarrierAdapter, RestCarrierAdapter)
CALL_CONTROLS: tuple[type[CallControl], ...] = (TwilioCarrierAdapter,)


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda adapter: adapter.__name__)
def test_an_adapter_declares_its_dial_options_and_takes_the_dials_keywords(adapter):
    assert isinstance(adapter.dial_options, bool) and isinstance(adapter.idempotent_dials, bool)
    parameters = inspect.signature(adapter.dial).parameters
    assert {"call", "max_seconds", "options"} <= parameters.keys()
    assert parameters["options"].default is None


@pytest.mark.parametrize("adapter", CALL_CONTROLS, ids=lambda adapter: adapter.__name__)
def test_a_call_control_hands_over_and_answers_machines(adapter):
    assert {"carrier_call_id", "target"} <= inspect.signature(adapter.transfer).parameters.keys()
    assert inspect.signature(adapter.machine_answer).parameters["message"].default == ""
