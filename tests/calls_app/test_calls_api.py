import pytest

from calls_app.call_texts import call_texts
from calls_app.models import Call
from tests.conftest import error_of, make_client
from tests.queries import assert_query_count

pytestmark = pytest.mark.django_db


def test_call_list_is_newest_first_with_parsed_transcripts(api_a, carrier_client, number_a):
    for ccid in ("CA1", "CA2"):
        for event in carrier_client.inbound_call(ccid):
            carrier_client.send(event)
    calls = api_a.get("/v2/calls").json()["calls"]
    assert [c["id"] for c in calls] == list(Call.objects.order_by("-created_at", "-id").values_list("id", flat=True))
    first = calls[0]
    assert first["id"].startswith("cl_")
    assert {k: first[k] for k in ("direction", "from_e164", "to_e164", "status", "carrier", "disclosed", "seconds")} \
        == {"direction": "inbound", "from_e164": "+491711234567", "to_e164": "+493055501234", "status": "completed",
            "carrier": "testcarrier", "disclosed": 1, "seconds": 125}
    assert [(e["role"], e["text"]) for e in first["transcript"]] == [
        ("assistant", "Guten Tag!"), ("system", "Tastatureingabe: 1"), ("user", "Einen Rückruf bitte.")]
    assert first["transcript"][0]["ts"].endswith("Z")


def test_one_call_by_id(api_a, carrier_client, number_a):
    for event in carrier_client.inbound_call("CA3"):
        carrier_client.send(event)
    call = Call.objects.get()
    body = api_a.get(f"/v2/calls/{call.pk}").json()
    assert body["id"] == call.pk and len(body["transcript"]) == 3


def test_call_of_another_tenant_is_404_like_an_unknown_id(api_b, carrier_client, number_a):
    carrier_client.post("call.started", {"carrierCallId": "CA4", "direction": "inbound", "from": "+491711234567",
                                         "to": number_a.e164})
    foreign = api_b.get(f"/v2/calls/{Call.objects.get().pk}")
    unknown = api_b.get("/v2/calls/cl_01jdoesnotexist0000000000")
    assert foreign.status_code == unknown.status_code == 404
    assert error_of(foreign) == error_of(unknown)
    assert api_b.get("/v2/calls").json() == {"calls": [], "next": None}


@pytest.mark.parametrize("query, expected", [("", 50), ("?limit=3", 3), ("?limit=200", 200), ("?limit=500", 200)])
def test_limit_defaults_to_50_and_is_clamped_at_200(api_a, tenant_a, carrier, query, expected):
    Call.objects.bulk_create(Call(tenant=tenant_a, carrier=carrier, direction="inbound", to_e164="+493055501234",
                                  status="completed") for _ in range(205))
    assert len(api_a.get(f"/v2/calls{query}").json()["calls"]) == expected


@pytest.mark.parametrize("limit", ["0", "-3", "abc", "2.5", ""])
def test_limit_that_is_not_a_positive_integer_is_400(api_a, limit):
    response = api_a.get(f"/v2/calls?limit={limit}")
    assert response.status_code == 400 and "limit" in error_of(response)["details"]


def test_call_list_takes_the_same_number_of_queries_whatever_the_limit(api_a, tenant_a, carrier, number_a,
                                                                       carrier_client):
    for index in range(6):
        for event in carrier_client.inbound_call(f"CAQ{index}"):
            carrier_client.send(event)
    api_a.get("/v2/usage")  # refreshes the key's last_used_at, once
    for limit in (1, 6):
        call_texts.clear()  # calls this process has written come without their lines (test_call_list.py)
        with assert_query_count(1 + 2):  # API key with its tenant; calls, transcript entries
            assert len(api_a.get(f"/v2/calls?limit={limit}").json()["calls"]) == limit


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_calls_cannot_be_written_through_v2(api_a, carrier_client, number_a, method):
    carrier_client.post("call.started", {"carrierCallId": "CA5", "direction": "inbound", "from": "+491711234567",
                                         "to": number_a.e164})
    call_id = Call.objects.get().pk
    on_item = getattr(api_a, method)(f"/v2/calls/{call_id}", {"status": "completed"}, format="json")
    on_list = getattr(api_a, method)("/v2/calls", {"to": "+491711234567"}, format="json")
    assert on_item.status_code == on_list.status_code == 405
    assert error_of(on_list)["code"] == "method_not_allowed"
    assert Call.objects.get().status == "active"


def test_calls_need_credentials(tenant_a):
    response = make_client(tenant="acme").get("/v2/calls")
    assert response.status_code == 401
