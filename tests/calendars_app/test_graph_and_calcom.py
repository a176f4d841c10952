"""Microsoft 365 (Graph) and Cal.com calendars against loopback fakes of their APIs:
the requests we send are checked field by field (the token grant, the calendar view,
the event with the caller and the call, the conditional change and removal; Cal.com's
slots and bookings with their API versions), and their conflict answers."""
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from calendars_app import services
from calendars_app.models import Appointment
from console.assistants.models import Assistant
from console.assistants.services import assistant_update
from tests.calendars_app.fake_services import FakeService
from tests.conftest import error_of

pytestmark = pytest.mark.django_db

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 11, 30, 8, 0, tzinfo=BERLIN)  # a Monday
TUESDAY_TEN = datetime(2026, 12, 1, 10, 0, tzinfo=BERLIN)
HOURS = {"tue": "10:00-11:00", "wed": "09:00-10:00"}


def ok(answer, headers=None, status=200):
    return lambda request: (status, headers or {}, answer)


@pytest.fixture
def graph(settings):
    busy = {"value": [{"start": {"dateTime": "2026-12-01T09:30:00.0000000", "timeZone": "UTC"},
                       "end": {"dateTime": "2026-12-01T10:00:00.0000000", "timeZone": "UTC"},
                       "showAs": "busy", "isCancelled": False},
                      {"start": {"dateTime": "2026-12-01T09:00:00.0000000", "timeZone": "UTC"},
                       "end": {"dateTime": "2026-12-01T09:30:00.0000000", "timeZone": "UTC"},
                       "showAs": "free", "isCancelled": False}]}

    def token(request):
        if request["body"].get("client_secret") != "geheim":
            return 401, {}, {"error": "invalid_client"}
        return 200, {}, {"access_token": "tok-1", "token_type": "Bearer", "expires_in": 3599}

    fake = FakeService([
        ("POST", "/login/", token),
        ("GET", "/graph/users/praxis@example.de/calendarView", ok(busy)),
        ("GET", "/graph/users/praxis@example.de/calendar", ok({"id": "AAMk", "name": "Kalender"})),
        ("POST", "/graph/users/praxis@example.de/events", ok({"id": "ev-1", "@odata.etag": 'W/"1"'}, status=201)),
        ("PATCH", "/graph/users/praxis@example.de/events/ev-1", ok({"id": "ev-1", "@odata.etag": 'W/"2"'})),
        ("DELETE", "/graph/users/praxis@example.de/events/ev-1", ok(None, status=204)),
    ])
    settings.CALENDAR_GRAPH_API_BASE = fake.url + "/graph"
    settings.CALENDAR_GRAPH_LOGIN_BASE = fake.url + "/login"
    yield fake
    fake.stop()


def assistant_with(tenant, calendar_id):
    assistant = Assistant.objects.create(tenant=tenant, name="Praxis")
    assistant_update(assistant=assistant, data={"appointmentTypes": [
        {"name": "Erstgespräch", "durationMinutes": 30, "calendar": calendar_id, "hours": HOURS,
         "minNoticeMinutes": 60}]})
    assistant.refresh_from_db()
    return assistant


def test_a_graph_calendar_is_checked_read_and_written_as_graph_expects(api_a, tenant_a, graph):
    body = {"name": "Praxis 365", "kind": "graph", "tenantId": "contoso-id", "clientId": "app-1",
            "clientSecret": "geheim", "mailbox": "praxis@example.de"}
    wrong = api_a.post("/v2/calendars", {**body, "clientSecret": "falsch"}, format="json")
    assert error_of(wrong)["details"] == {"reason": "unauthorized"}
    created = api_a.post("/v2/calendars", body, format="json")
    assert created.status_code == 201, created.content
    grant = graph.requests_to("POST", "/login/contoso-id/oauth2/v2.0/token")[-1]
    assert grant["body"] == {"grant_type": "client_credentials", "client_id": "app-1", "client_secret": "geheim",
                             "scope": "https://graph.microsoft.com/.default"}
    assert graph.requests_to("GET", "/graph/users/praxis@example.de/calendar")[0]["headers"]["authorization"] == \
        "Bearer tok-1"
    assistant = assistant_with(tenant_a, created.json()["id"])

    offered = services.find_slots(assistant=assistant, when="Dienstag", now=NOW)
    view = graph.requests_to("GET", "/graph/users/praxis@example.de/calendarView")[-1]
    assert set(view["query"]) == {"startDateTime", "endDateTime", "$select", "$top"}
    assert view["headers"]["prefer"] == 'outlook.timezone="UTC"'
    # 10:30–11:00 Berlin is busy (09:30 UTC); the 'free' event is not
    assert [slot["start"] for slot in offered["slots"]] == ["2026-12-01T10:00:00+01:00", "2026-12-02T09:00:00+01:00"]

    booked = services.appointment_book(assistant=assistant, start=TUESDAY_TEN, caller_e164="+4917612345678",
                                       caller_name="Lehmann", call_id="cl_graph1", now=NOW)
    assert booked["ok"], booked
    event = graph.requests_to("POST", "/graph/users/praxis@example.de/events")[0]["body"]
    assert event["subject"] == "Erstgespräch: Lehmann (+4917612345678)"
    assert event["start"] == {"dateTime": "2026-12-01T10:00:00", "timeZone": "Europe/Berlin"}
    assert event["end"] == {"dateTime": "2026-12-01T10:30:00", "timeZone": "Europe/Berlin"}
    assert "gebucht von Stimmwerk, Anruf cl_graph1" in event["body"]["content"] and event["showAs"] == "busy"
    assert event["transactionId"].startswith("stimmwerk-")

    moved = services.appointment_move(assistant=assistant, caller_e164="+4917612345678", caller_name="Lehmann",
                                      start="2026-12-02T09:00", now=NOW)
    assert moved["ok"], moved
    change = graph.requests_to("PATCH", "/graph/users/praxis@example.de/events/ev-1")[0]
    assert change["headers"]["if-match"] == 'W/"1"' and change["body"]["start"]["dateTime"] == "2026-12-02T09:00:00"
    assert services.appointment_cancel(assistant=assistant, caller_e164="+4917612345678", caller_name="Lehmann",
                                       now=NOW)["ok"]
    assert graph.requests_to("DELETE", "/graph/users/praxis@example.de/events/ev-1")[0]["headers"]["if-match"] == \
        'W/"2"'


@pytest.fixture
def calcom(settings):
    slots = {"status": "success", "data": {"2026-12-01": [{"start": "2026-12-01T09:00:00.000Z"}],
                                           "2026-12-02": [{"start": "2026-12-02T08:00:00.000Z"}]}}
    taken = {"n": 0}

    def book(request):
        taken["n"] += 1
        if taken["n"] > 1:
            return 409, {}, {"status": "error", "error": {"message": "User either already has booking at this time"}}
        return 201, {}, {"status": "success", "data": {"uid": "bk-uid-1", "id": 77}}

    fake = FakeService([
        ("GET", "/v2/event-types/4711", ok({"status": "success", "data": {"id": 4711, "lengthInMinutes": 30}})),
        ("GET", "/v2/slots", ok(slots)),
        ("POST", "/v2/bookings/bk-uid-1/cancel", ok({"status": "success", "data": {}})),
        ("POST", "/v2/bookings", book),
    ])
    settings.CALENDAR_CALCOM_API_BASE = fake.url
    yield fake
    fake.stop()


def test_a_calcom_event_type_is_booked_with_its_api_versions_and_a_conflict_is_a_taken_slot(api_a, tenant_a,
                                                                                            calcom):
    created = api_a.post("/v2/calendars", {"name": "Cal", "kind": "calcom", "apiKey": "cal_live_x",
                                           "eventTypeId": "4711"}, format="json")
    assert created.status_code == 201, created.content
    assistant = assistant_with(tenant_a, created.json()["id"])
    offered = services.find_slots(assistant=assistant, when="Dienstag", now=NOW)
    query = calcom.requests_to("GET", "/v2/slots")[-1]
    assert query["headers"]["cal-api-version"] == "2024-09-04" and query["headers"]["authorization"] == \
        "Bearer cal_live_x"
    assert query["query"]["eventTypeId"] == "4711" and query["query"]["timeZone"] == "UTC"
    assert [slot["start"] for slot in offered["slots"]] == ["2026-12-01T10:00:00+01:00", "2026-12-02T09:00:00+01:00"]
    booked = services.appointment_book(assistant=assistant, start=TUESDAY_TEN, caller_e164="+4917612345678",
                                       caller_name="Lehmann", call_id="cl_cal1", now=NOW)
    assert booked["ok"], booked
    sent = calcom.requests_to("POST", "/v2/bookings")[0]
    assert sent["headers"]["cal-api-version"] == "2024-08-13"
    assert sent["body"]["start"] == "2026-12-01T09:00:00Z" and sent["body"]["eventTypeId"] == 4711
    assert sent["body"]["attendee"] == {"name": "Lehmann", "timeZone": "Europe/Berlin", "language": "de",
                                       "phoneNumber": "+4917612345678"}
    assert "Anruf cl_cal1" in sent["body"]["bookingFieldsResponses"]["notes"]
    assert Appointment.objects.get().external_id == "bk-uid-1"
    second = services.appointment_book(assistant=assistant, start="2026-12-02T09:00", caller_e164="+4915123456789",
                                       caller_name="Neumann", now=NOW)
    assert second["ok"] is False and second["error"] == "slot_taken"
    assert services.appointment_cancel(assistant=assistant, caller_e164="+4917612345678", caller_name="Lehmann",
                                       now=NOW)["ok"]
    assert calcom.requests_to("POST", "/v2/bookings/bk-uid-1/cancel")[0]["body"] == {
        "cancellationReason": "Vom Anrufer abgesagt"}
