from datetime import datetime, timezone

import pytest

from calls_app.models import Call, UsageCounter
from calls_app.selectors import usage_for
from tests.calls_app.conftest import CALLER
from tests.conftest import error_of, make_client
from tests.queries import assert_query_count

pytestmark = pytest.mark.django_db


def play(carrier_client, ccid, seconds, occurred_at=None):
    for event in carrier_client.inbound_call(ccid, seconds=seconds, occurred_at=occurred_at):
        carrier_client.send(event)


def test_usage_counts_whole_started_minutes_per_call(api_a, carrier_client, number_a):
    for index, seconds in enumerate((1, 60, 61, 0)):
        play(carrier_client, f"CA{index}", seconds)
    body = api_a.get("/v2/usage").json()
    assert body == {
        "tenant": "acme", "period": usage_for(tenant=number_a.tenant)["period"],
        "minutesThisMonth": 1 + 1 + 2 + 0, "secondsThisMonth": 122, "minuteCap": 10, "reservedMinutes": 0,
        "remainingMinutes": 6, "resetsAt": body["resetsAt"],
    }


def test_usage_of_a_tenant_without_calls_is_zero(api_b):
    body = api_b.get("/v2/usage").json()
    assert (body["tenant"], body["minutesThisMonth"], body["remainingMinutes"]) == ("globex", 0, 1000)


def test_usage_is_per_tenant(api_b, carrier_client, number_a):
    play(carrier_client, "CA9", 300)
    assert api_b.get("/v2/usage").json()["minutesThisMonth"] == 0


def test_remaining_minutes_subtract_reservations_and_never_go_negative(api_a, tenant_a, number_a, carrier_client):
    api_a.post("/voice/v1/calls", {"to": CALLER}, format="json")
    body = api_a.get("/v2/usage").json()
    assert (body["reservedMinutes"], body["remainingMinutes"]) == (10, 0)
    play(carrier_client, "CA10", 900)  # inbound: counted, never refused
    assert api_a.get("/v2/usage").json()["remainingMinutes"] == 0


def test_a_call_counts_in_the_berlin_month_in_which_it_started(tenant_a, carrier_client, number_a):
    play(carrier_client, "LATE", 120, occurred_at="2025-01-31T22:59:59+00:00")  # 23:59:59 Berlin, January
    play(carrier_client, "EARLY", 60, occurred_at="2025-01-31T23:00:00+00:00")  # 00:00 Berlin, February
    january = usage_for(tenant=tenant_a, now=datetime(2025, 1, 31, 22, 59, 59, tzinfo=timezone.utc))
    february = usage_for(tenant=tenant_a, now=datetime(2025, 1, 31, 23, 0, 0, tzinfo=timezone.utc))
    assert (january["period"], january["minutesThisMonth"]) == ("2025-01", 2)
    assert (february["period"], february["minutesThisMonth"]) == ("2025-02", 1)
    assert january["resetsAt"] == "2025-01-31T23:00:00Z"


def test_usage_month_follows_the_tenants_time_zone(tenant_a, carrier_client, number_a):
    tenant_a.time_zone = "America/New_York"
    tenant_a.save(update_fields=["time_zone"])
    play(carrier_client, "NY", 60, occurred_at="2025-02-01T03:00:00+00:00")  # still 31 January in New York
    assert UsageCounter.objects.get().period == "2025-01"


def test_usage_reads_one_row_whatever_the_number_of_calls(api_a, tenant_a, carrier, number_a, carrier_client):
    play(carrier_client, "CAX", 30)
    Call.objects.bulk_create(Call(tenant=tenant_a, carrier=carrier, direction="inbound", to_e164=number_a.e164,
                                  status="completed", seconds=60) for _ in range(300))
    api_a.get("/v2/usage")
    with assert_query_count(1 + 1):  # API key with its tenant; counter row
        assert api_a.get("/v2/usage").status_code == 200


def test_usage_needs_a_tenant(key_a):
    response = make_client(key_a).get("/v2/usage")
    assert response.status_code == 400 and error_of(response)["code"] == "tenant_required"
