"""Every call measures itself: the voice agent's reply latencies stored with the call,
summarised in GET /v2/calls/{id} and on the admin's call page."""
import pytest
from django.contrib.auth import get_user_model

from calls_app.models import Call
from calls_app.services import call_request_web, call_turn_latency_record

pytestmark = pytest.mark.django_db

# (total, end of turn, recognition, thinking, synthesis) of five replies.
REPLIES = [(900, 300, 450, 60, 90), (700, 250, 300, 70, 80), (1500, 900, 400, 100, 100),
           (650, 200, 300, 50, 100), (800, 250, 400, 60, 90)]


@pytest.fixture
def measured_call(tenant_a):
    call = call_request_web(tenant=tenant_a)
    for total, end_of_turn, recognition, thinking, synthesis in REPLIES:
        call_turn_latency_record(call_id=call.pk, total_ms=total, end_of_turn_ms=end_of_turn,
                                 recognition_ms=recognition, thinking_ms=thinking, synthesis_ms=synthesis)
    return call


def test_the_call_says_how_fast_it_was_answered(api_a, measured_call):
    body = api_a.get(f"/v2/calls/{measured_call.pk}").json()
    # Nearest rank: the 3rd of 5 totals for p50 (650 700 [800] 900 1500), the 5th for p90.
    assert body["latency"] == {"turns": 5, "p50_ms": 800, "p90_ms": 1500, "max_ms": 1500,
                               "median_ms": {"end_of_turn": 250, "recognition": 400, "thinking": 60, "synthesis": 90}}


def test_a_call_without_replies_has_no_latency(api_a, tenant_a):
    call = call_request_web(tenant=tenant_a)
    assert api_a.get(f"/v2/calls/{call.pk}").json()["latency"] is None


def test_the_list_is_unchanged_and_another_tenant_sees_nothing(api_a, api_b, measured_call):
    listed = api_a.get("/v2/calls").json()["calls"]
    assert [call["id"] for call in listed] == [measured_call.pk] and "latency" not in listed[0]
    assert api_b.get(f"/v2/calls/{measured_call.pk}").status_code == 404


def test_the_admins_call_page_shows_the_latency(client, measured_call):
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))
    page = client.get(f"/admin/calls_app/call/{measured_call.pk}/change/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Antwortzeit" in page
    assert "Median 800 ms, 90 % innerhalb von 1500 ms, langsamste 1500 ms (5 Antworten)" in page
    assert "Spracherkennung 400 ms" in page


def test_the_measurements_go_with_their_call(measured_call):
    assert measured_call.turn_latencies.count() == len(REPLIES)
    Call.objects.filter(pk=measured_call.pk).delete()
    from calls_app.models import TurnLatency

    assert not TurnLatency.objects.exists()
