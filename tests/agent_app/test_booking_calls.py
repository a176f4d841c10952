"""Booking by voice over whole phone conversations, without audio: the conversation
core's mind (agent_app.mind) with the assistant's real tools, answered offline by the
dialogue policy on the mock lane — and the same through a streaming tool-calling lane
(a fake OpenAI-compatible server on loopback) — booking, moving and cancelling in a
real CalDAV server (Radicale), read back with the `caldav` client. Three calls from the
caller's number: one books, one moves, one cancels; a call from another number finds
nothing of theirs; a calendar that hangs is an apology and a callback offered in time."""
import json
import re
import time
from datetime import datetime

import caldav
import pytest

from agent_app.mind import Mind
from agent_app.services import phone_call_register
from calendars_app.models import Appointment, Calendar
from calls_app.phone_calls import number_route
from calls_app.services import carrier_create
from console.assistants.models import Assistant
from console.assistants.services import assistant_update
from console.numbers.services import number_create
from tests.calendars_app.conftest import calendar_url, dav  # noqa: F401 - the Radicale fixtures
from tests.calendars_app.test_booking import stalling_server
from tests.gateway_app.conftest import load_lanes, streaming_lane
from tests.openai_fake import FakeToolCall, Reply

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CALLER, OTHER, CALLED = "+4917612345678", "+4915123456789", "+493055500123"
TOOLS = ["find_slots", "book_appointment", "move_appointment", "cancel_appointment", "create_callback", "end_call"]
WEEK = {day: "08:00-18:00" for day in ("mon", "tue", "wed", "thu", "fri")}


@pytest.fixture
def practice(api_a, tenant_a, dav, calendar_url):  # noqa: F811 - the fixtures imported above
    calendar = api_a.post("/v2/calendars", {"name": "Praxis", "kind": "caldav", "url": calendar_url,
                                            "username": dav.user, "password": dav.password}, format="json")
    assert calendar.status_code == 201, calendar.content
    tenant_a.minute_cap = 1000  # four calls, each granted its minutes
    tenant_a.save(update_fields=["minute_cap"])
    assistant = Assistant.objects.create(tenant=tenant_a, name="Praxis", tools=TOOLS)
    assistant_update(assistant=assistant, data={"appointmentTypes": [{
        "name": "Erstgespräch", "durationMinutes": 30, "calendar": calendar.json()["id"], "hours": WEEK,
        "minNoticeMinutes": 60}]})
    assistant.refresh_from_db()
    return assistant, calendar_url, dav


@pytest.fixture
def line(practice, tenant_a, fake_twilio):
    """The practice's number on a Twilio carrier (its REST API the loopback fake: the SMS leave there)."""
    carrier_create(carrier_id="tw1", kind="twilio", credentials={"account_sid": "AC" + "0" * 32,
                                                                  "auth_token": "token", "api_base": fake_twilio.url})
    number_create(tenant=tenant_a, e164=CALLED, assistant_id=practice[0].pk)
    return practice


_sids = iter(range(1, 1000))


def phone_call(tenant, assistant, caller=CALLER):
    """A new inbound phone call from `caller` to the practice's number, and its mind."""
    sid = f"CA{next(_sids):032d}"
    from calls_app.models import Carrier

    call, _token = phone_call_register(carrier=Carrier.objects.get(pk="tw1"), number=number_route(e164=CALLED),
                                       carrier_call_id=sid, from_e164=caller, to_e164=CALLED, transport="twilio")
    return Mind(tenant=tenant, call_id=call.pk, language="de", assistant=assistant, caller_e164=caller,
                channel="Telefon")


def events(url, server):
    client = caldav.DAVClient(url=url, username=server.user, password=server.password)
    found = []
    for item in client.calendar(url=url).events():
        for component in item.icalendar_instance.walk("VEVENT"):
            found.append({"start": component.get("dtstart").dt, "summary": str(component.get("summary"))})
    return found


def offered_starts(mind):
    """The slots find_slots answered last in this call (ISO 8601), as the tool gave them."""
    for message in reversed(mind.messages):
        if message["role"] == "tool":
            result = json.loads(message["content"]).get("result") or {}
            if "slots" in result:
                return [slot["start"] for slot in result["slots"]]
    raise AssertionError("find_slots was not called")


def test_a_caller_books_moves_and_cancels_by_voice_with_the_offline_policy(line, tenant_a, mock_gateway,
                                                                           fake_twilio):
    from messaging_app.models import Sms

    assistant, url, server = line
    # No messaging settings: the SMS confirmation leaves through the call's own Twilio carrier (the default).
    assistant.tools = [*TOOLS, "send_sms"]
    assistant.save(update_fields=["tools"])
    # The first call books.
    mind = phone_call(tenant_a, assistant)
    offer = mind.turn("Ich hätte gern einen Termin nächste Woche Dienstag vormittag")
    first, second = offered_starts(mind)[:2]
    assert "Dienstag" in offer.text and "Welcher Termin passt" in offer.text
    assert datetime.fromisoformat(first).weekday() == 1 and datetime.fromisoformat(first).hour < 12
    assert "Namen" in mind.turn("Den ersten bitte").text
    booked = mind.turn("Mein Name ist Lehmann.")
    assert re.search(r"Ihr Termin ist gebucht: Dienstag, den \w+ \w+, um ", booked.text), booked.text
    assert any("book_appointment" in note and "Termin gebucht" in note for note in booked.notes), booked.notes
    [event] = events(url, server)
    assert event["start"] == datetime.fromisoformat(first) and "Lehmann" in event["summary"]
    assert CALLER in event["summary"]
    assert "Die Bestätigung schicke ich Ihnen per SMS." in booked.text
    sms = Sms.objects.get(call_id=mind.call_id)  # the confirmation, to the caller's own number
    assert (sms.to_e164, sms.template) == (CALLER, "confirmation") and f"{datetime.fromisoformat(first):%H:%M}" in sms.text
    [message] = fake_twilio.messages  # sent when the turn's writes committed
    assert (sms.status, message["form"]) == ("sent", {"To": CALLER, "From": CALLED, "Body": sms.text})

    # Another caller naming the same name finds nothing of theirs.
    stranger = phone_call(tenant_a, assistant, caller=OTHER)
    stranger.turn("Ich möchte meinen Termin absagen.")
    assert "keinen kommenden Termin" in stranger.turn("Lehmann").text
    assert len(events(url, server)) == 1

    # The second call moves it to the other slot offered.
    mind = phone_call(tenant_a, assistant)
    assert "Namen" in mind.turn("Ich muss meinen Termin verschieben.").text
    assert "Auf wann" in mind.turn("Mein Name ist Lehmann.").text
    mind.turn("Nächste Woche Dienstag vormittag")
    starts = offered_starts(mind)
    moved = mind.turn("Den zweiten, bitte.")
    assert "verschoben auf Dienstag" in moved.text, moved.text
    [event] = events(url, server)
    assert event["start"] == datetime.fromisoformat(starts[1]) != datetime.fromisoformat(first)
    assert second  # two slots were offered the first time too

    # The third call cancels it.
    mind = phone_call(tenant_a, assistant)
    mind.turn("Ich möchte den Termin am Dienstag absagen, bitte.")
    cancelled = mind.turn("Mein Name ist Lehmann.")
    assert "ist abgesagt" in cancelled.text and "Dienstag" in cancelled.text
    assert events(url, server) == []
    assert Appointment.objects.get().status == "cancelled"


def test_a_hanging_calendar_is_an_apology_and_a_callback_offered_within_the_turn(
        line, tenant_a, mock_gateway, settings):
    assistant, _url, _dav = line
    settings.CALENDAR_TIMEOUT_SEC = 0.5
    with stalling_server(None) as hanging:
        Calendar.objects.filter(pk=assistant.appointment_types[0]["calendar"]).update(url=hanging)
        mind = phone_call(tenant_a, assistant)
        started = time.monotonic()
        answer = mind.turn("Ich hätte gern einen Termin nächste Woche Dienstag vormittag")
        elapsed = time.monotonic() - started
    assert "nicht erreichbar" in answer.text and "Rückruf" in answer.text
    assert elapsed < settings.AGENT_THINK_DEADLINE_SEC
    assert "Nummer" in mind.turn("Ja, gerne.").text  # the callback is taken down


def test_the_same_booking_through_a_streaming_tool_calling_lane(line, tenant_a, settings, chat_server):
    assistant, url, server = line
    settings.GATEWAY_MODE = "live"

    def model(body):
        """A model that books the first slot find_slots gives, for the name the caller said."""
        messages = body["messages"]
        last = messages[-1]
        if last["role"] == "user" and "Termin" in last["content"]:
            return Reply(text="Ich schaue nach.", tool_calls=[FakeToolCall(
                "call_1", "find_slots", json.dumps({"when": "nächste Woche Dienstag vormittag"}))])
        if last["role"] == "tool" and "slots" in last["content"]:
            slot = json.loads(last["content"])["result"]["slots"][0]
            return Reply(text=f"Ich kann Ihnen {slot['said']} anbieten. Auf welchen Namen?")
        if last["role"] == "user":
            start = next(json.loads(m["content"])["result"]["slots"][0]["start"] for m in messages
                         if m["role"] == "tool" and '"slots"' in m["content"])
            return Reply(tool_calls=[FakeToolCall("call_2", "book_appointment",
                                                  json.dumps({"start": start, "name": "Neumann"}))])
        said = json.loads(last["content"])["result"]["said"]
        return Reply(text=f"Ihr Termin ist gebucht: {said}.")

    lane = chat_server(model)
    load_lanes(streaming_lane("chat-local", endpoint=lane.url))
    mind = phone_call(tenant_a, assistant)
    offer = mind.turn("Ich hätte gern einen Termin nächste Woche Dienstag vormittag.")
    assert "Dienstag" in offer.text
    booked = mind.turn("Neumann, bitte.")
    assert "Ihr Termin ist gebucht: Dienstag" in booked.text
    [event] = events(url, server)
    assert "Neumann" in event["summary"] and CALLER in event["summary"]
    assert {tool["function"]["name"] for tool in lane.bodies[0]["tools"]} >= {
        "find_slots", "book_appointment", "move_appointment", "cancel_appointment"}


def test_a_browser_session_books_with_the_number_the_caller_says(practice, tenant_a, mock_gateway):
    from calls_app import services as calls

    assistant, url, server = practice
    call = calls.call_request_web(tenant=tenant_a, assistant=assistant)
    calls.call_web_start(call_id=call.pk)
    mind = Mind(tenant=tenant_a, call_id=call.pk, language="de", assistant=assistant, channel="Sprache")
    mind.turn("Haben Sie nächste Woche Dienstag vormittag noch etwas frei?")
    first = offered_starts(mind)[0]
    mind.turn("Den ersten bitte.")
    assert "Nummer" in mind.turn("Mein Name ist Neumann.").text
    read_back = mind.turn("Meine Nummer ist null eins fünf eins, eins zwei drei vier, fünf sechs sieben acht.")
    assert "Ich wiederhole: null eins fünf eins" in read_back.text
    booked = mind.turn("Ja, das ist richtig.")
    assert "Ihr Termin ist gebucht: Dienstag" in booked.text, booked.text
    [event] = events(url, server)
    assert event["start"] == datetime.fromisoformat(first) and "Neumann (+4915112345678" in event["summary"]
    # Changing it needs the caller's own number: a browser session is told to call.
    assert "von Ihrer Nummer aus anrufen" in mind.turn("Ich möchte den Termin doch absagen.").text
    assert len(events(url, server)) == 1
