"""The SMS tests' shared parts: a caller's call, and sipgate's fake chosen as the tenant's provider."""
from typing import Any

import pytest

from calls_app.models import Call, Carrier
from tests.messaging_app.sipgate_fake import FakeSipgate

MOBILE = "+4917612345678"
TOKEN_ID, TOKEN = "token-ABC123", "0f1e2d3c-secret"
WHEN = {"date": "Dienstag, 1. Dezember", "time": "10:30"}


def call_from(tenant: Any, number: str = MOBILE, **fields: Any) -> Call:
    carrier, _ = Carrier.objects.get_or_create(id="sim-sms", defaults={"secret_nonce": "n"})
    return Call.objects.create(tenant=tenant, carrier=carrier, direction="inbound", from_e164=number,
                               to_e164="+493055501234", status="completed", **fields)


@pytest.fixture
def sipgate(settings: Any, api_a: Any) -> Any:
    with FakeSipgate(token_id=TOKEN_ID, token=TOKEN) as fake:
        settings.MESSAGING_SIPGATE_API_BASE = fake.url
        answer = api_a.patch("/v2/messaging", {"provider": "sipgate", "sipgateTokenId": TOKEN_ID,
                                               "sipgateToken": TOKEN, "sipgateSmsId": "s0"}, format="json")
        assert answer.status_code == 200, answer.content
        yield fake


