"""Fixtures of the calls tests: a carrier with its secret, numbers, and a helper that
posts signed events to the webhook exactly as a carrier would."""
import json
import time
import uuid
from datetime import datetime, timedelta

import pytest
from rest_framework.test import APIClient

from calls_app.services import carrier_create
from calls_app.signing import signature_header
from console.numbers.services import number_create
from tests.gateway_app.conftest import chat_server  # noqa: F401 - the fake model lanes' fixture (call analysis)

NUMBER_A = "+493055501234"
CALLER = "+491711234567"


@pytest.fixture
def carrier(db):
    carrier, secret = carrier_create(carrier_id="testcarrier", name="Test carrier")
    carrier.secret = secret
    return carrier


@pytest.fixture
def number_a(tenant_a):
    return number_create(tenant=tenant_a, e164=NUMBER_A)


class CarrierClient:
    """Posts events to /voice/webhook/<carrier> with a valid (or chosen) signature."""

    def __init__(self, carrier):
        self.carrier = carrier
        self.client = APIClient()

    def post_raw(self, body, *, signature=None, timestamp=None, secret=None):
        if signature is None:
            signature = signature_header(secret or self.carrier.secret, body, timestamp)
        return self.client.generic(
            "POST", f"/voice/webhook/{self.carrier.pk}", body, content_type="application/json",
            HTTP_X_SIGNATURE=signature,
        )

    def event(self, event_type, data, *, event_id=None, occurred_at=None):
        occurred_at = occurred_at or now_iso()
        return {"id": event_id or f"evt_{uuid.uuid4().hex}", "type": event_type, "occurredAt": occurred_at,
                "data": data}

    def send(self, event, **signing):
        return self.post_raw(json.dumps(event).encode(), **signing)

    def post(self, event_type, data, **kwargs):
        signing = {k: kwargs.pop(k) for k in ("signature", "timestamp", "secret") if k in kwargs}
        return self.send(self.event(event_type, data, **kwargs), **signing)

    def inbound_call(self, carrier_call_id, *, to=NUMBER_A, seconds=125, occurred_at=None):
        """The events of a whole inbound call, in order."""
        occurred_at = occurred_at or now_iso()
        start = datetime.fromisoformat(occurred_at)

        def ts(seconds):
            return (start + timedelta(seconds=seconds)).isoformat()

        return [
            self.event("call.started", {"carrierCallId": carrier_call_id, "direction": "inbound",
                                        "from": CALLER, "to": to}, occurred_at=occurred_at),
            self.event("call.disclosed", {"carrierCallId": carrier_call_id}, occurred_at=occurred_at),
            self.event("call.transcript", {"carrierCallId": carrier_call_id, "role": "assistant",
                                           "text": "Guten Tag!", "ts": ts(0)}, occurred_at=occurred_at),
            self.event("call.transcript", {"carrierCallId": carrier_call_id, "role": "system",
                                           "text": "Tastatureingabe: 1", "ts": ts(5)},
                       occurred_at=occurred_at),
            self.event("call.transcript", {"carrierCallId": carrier_call_id, "role": "user",
                                           "text": "Einen Rückruf bitte.", "ts": ts(9)},
                       occurred_at=occurred_at),
            self.event("call.ended", {"carrierCallId": carrier_call_id, "status": "completed", "seconds": seconds},
                       occurred_at=occurred_at),
        ]


@pytest.fixture
def carrier_client(carrier):
    return CarrierClient(carrier)


def now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
