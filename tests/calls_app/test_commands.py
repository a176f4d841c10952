import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from calls_app.models import Call, Carrier, UsageCounter
from calls_app.signing import carrier_secret, signature_header
from console.demo import seed_demo
from console.numbers.services import number_create

pytestmark = pytest.mark.django_db


def run(*args):
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_carrier_prints_a_url_safe_secret_alone_on_the_last_line_that_signs_events(client):
    secret = run("create_carrier", "telco").strip().splitlines()[-1]
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", secret)
    assert secret not in json.dumps(list(Carrier.objects.values()), default=str)  # only a nonce is stored
    body = json.dumps({"id": "e1", "type": "call.disclosed", "occurredAt": "2025-01-01T00:00:00Z",
                       "data": {"carrierCallId": "x"}}).encode()
    response = client.post("/voice/webhook/telco", body, content_type="application/json",
                           HTTP_X_SIGNATURE=signature_header(secret, body))
    assert response.status_code == 202


def test_create_carrier_refuses_an_existing_id_and_rotate_replaces_the_secret():
    first = run("create_carrier", "telco").splitlines()[-1]
    with pytest.raises(CommandError):
        run("create_carrier", "telco")
    rotated = run("create_carrier", "telco", "--rotate").splitlines()[-1]
    assert rotated != first and carrier_secret(Carrier.objects.get(pk="telco")) == rotated


def test_create_carrier_refuses_a_bad_id():
    with pytest.raises(CommandError):
        run("create_carrier", "no spaces!")


def test_simulate_call_plays_an_inbound_call_through_the_webhook(tenant_a):
    number_create(tenant=tenant_a, e164="+493055501234")
    output = run("simulate_call", "acme", "--seconds", "61", "--shuffle")
    call = Call.objects.get()
    assert "Played inbound call" in output
    assert (call.status, call.seconds, call.disclosed) == ("completed", 61, True)
    assert UsageCounter.objects.get().minutes == 2


def test_simulate_call_outbound_respects_the_cap(tenant_a):
    run("simulate_call", "acme", "--direction", "outbound", "--seconds", "900")
    assert Call.objects.get().seconds == 600  # the grant, not the asked length
    with pytest.raises(CommandError, match="Refused"):
        run("simulate_call", "acme", "--direction", "outbound")


def test_simulate_call_needs_a_number_for_inbound_calls(tenant_a):
    with pytest.raises(CommandError, match="no such number"):
        run("simulate_call", "acme")


def test_recompute_usage_reports_and_corrects_drift(tenant_a):
    run("simulate_call", "acme", "--direction", "outbound", "--seconds", "90")
    assert "No drift" in run("recompute_usage")
    UsageCounter.objects.update(minutes=7)
    with pytest.raises(SystemExit):
        run("recompute_usage", "--dry-run")
    assert UsageCounter.objects.get().minutes == 7
    output = run("recompute_usage", "--tenant", "acme")
    assert "minutes: counter 7, calls say 2" in output
    assert UsageCounter.objects.get().minutes == 2


def test_seed_demo_gives_the_demo_tenant_calls_once():
    seed_demo()
    calls = Call.objects.filter(tenant__slug="demo")
    first = sorted(calls.values_list("id", flat=True))
    assert {"inbound", "outbound"} <= set(calls.values_list("direction", flat=True))
    assert all(call.status == "completed" and call.transcript_entries.exists() for call in calls)
    seed_demo()
    assert sorted(Call.objects.filter(tenant__slug="demo").values_list("id", flat=True)) == first


def test_create_carrier_stores_the_caller_id_as_e164_and_refuses_other_text():
    run("create_carrier", "telco", "--caller-id", "030 1234567")
    assert Carrier.objects.get().caller_id == "+49301234567"

    with pytest.raises(CommandError, match="caller-id"):
        run("create_carrier", "other", "--caller-id", "12")


def test_carrier_service_refuses_a_caller_id_that_is_no_phone_number():
    from calls_app.services import carrier_create
    from console.errors import ValidationFailed

    with pytest.raises(ValidationFailed) as refused:
        carrier_create(carrier_id="telco", caller_id="javascript:alert(1)")
    assert list(refused.value.details) == ["caller_id"] and not Carrier.objects.exists()
