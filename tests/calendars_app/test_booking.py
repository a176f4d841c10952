"""Booking, moving and cancelling in a real CalDAV server (Radicale), read back with the
`caldav` client: what the event carries, the conditional writes, no double booking
when two callers take the last slot at once, the caller's own appointments only, and a
calendar that fails or hangs answered within bounded time."""
import contextlib
import socket
import threading
import time
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import caldav
import pytest

from calendars_app import services
from calendars_app.kinds.base import Conflict, Written
from calendars_app.kinds.caldav import CalDavProvider
from calendars_app.models import Appointment
from console.assistants.models import Assistant
from console.assistants.services import assistant_update
from tests.live_service import free_port

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 11, 30, 8, 0, tzinfo=BERLIN)  # a Monday
TUESDAY_TEN = datetime(2026, 12, 1, 10, 0, tzinfo=BERLIN)


@pytest.fixture
def practice(api_a, tenant_a, dav, calendar_url):
    calendar = api_a.post("/v2/calendars", {"name": "Praxis", "kind": "caldav", "url": calendar_url,
                                            "username": dav.user, "password": dav.password}, format="json").json()
    assistant = Assistant.objects.create(tenant=tenant_a, name="Praxis")
    assistant_update(assistant=assistant, data={"appointmentTypes": [{
        "name": "Erstgespräch", "durationMinutes": 30, "bufferAfterMinutes": 0, "calendar": calendar["id"],
        "hours": {"tue": {"start": "10:00", "end": "11:00"}, "wed": "09:00-10:00"}, "minNoticeMinutes": 60}]})
    assistant.refresh_from_db()
    return assistant, calendar_url, dav


def events(url, dav):
    client = caldav.DAVClient(url=url, username=dav.user, password=dav.password)
    found = []
    for item in client.calendar(url=url).events():
        for component in item.icalendar_instance.walk("VEVENT"):
            found.append({"start": component.get("dtstart").dt, "summary": str(component.get("summary")),
                          "description": str(component.get("description"))})
    return found


def book(assistant, start, number="+4917612345678", name="Lehmann", call_id="cl_test1"):
    return services.appointment_book(assistant=assistant, start=start, caller_e164=number, caller_name=name,
                                     call_id=call_id, now=NOW)


def test_slots_fit_the_wish_and_a_booking_is_in_the_calendar(practice):
    assistant, url, dav = practice
    offered = services.find_slots(assistant=assistant, when="Dienstag vormittag", now=NOW)
    assert offered["ok"] and [slot["start"] for slot in offered["slots"]] == [
        "2026-12-01T10:00:00+01:00", "2026-12-01T10:30:00+01:00"]
    assert offered["slots"][0]["said"] == "Dienstag, den ersten Dezember, um zehn Uhr"
    booked = book(assistant, offered["slots"][0]["start"])
    assert booked["ok"], booked
    assert booked["note"] == "Termin gebucht: Dienstag, 01.12.2026, 10:00 Uhr (Erstgespräch, Lehmann)"
    [event] = events(url, dav)
    assert event["start"] == TUESDAY_TEN and event["summary"] == "Erstgespräch: Lehmann (+4917612345678)"
    assert "gebucht von Stimmwerk, Anruf cl_test1" in event["description"] and "Lehmann" in event["description"]
    again = services.find_slots(assistant=assistant, when="Dienstag", now=NOW)
    assert [slot["start"] for slot in again["slots"]] == ["2026-12-01T10:30:00+01:00", "2026-12-02T09:00:00+01:00"]


def test_a_busy_time_written_by_someone_else_is_not_offered_nor_booked(practice):
    assistant, url, dav = practice
    client = caldav.DAVClient(url=url, username=dav.user, password=dav.password)
    client.calendar(url=url).save_event(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Praxis//DE\r\nBEGIN:VEVENT\r\nUID:privat-1\r\n"
        "DTSTAMP:20261120T080000Z\r\nDTSTART:20261201T090000Z\r\nDTEND:20261201T094500Z\r\n"
        "SUMMARY:Chefin privat\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")  # 10:00–10:45 in Berlin
    offered = services.find_slots(assistant=assistant, when="Dienstag um zehn", now=NOW)
    assert "2026-12-01T10:00:00+01:00" not in [slot["start"] for slot in offered["slots"]]
    refused = book(assistant, TUESDAY_TEN)
    assert refused["ok"] is False and refused["error"] == "slot_taken"
    assert [slot["start"] for slot in refused["slots"]] == ["2026-12-02T09:00:00+01:00",
                                                              "2026-12-02T09:30:00+01:00"]
    assert len(events(url, dav)) == 1


def test_a_recurring_event_is_busy_on_each_of_its_days(practice):
    assistant, url, dav = practice
    client = caldav.DAVClient(url=url, username=dav.user, password=dav.password)
    client.calendar(url=url).save_event(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Praxis//DE\r\nBEGIN:VEVENT\r\nUID:team-1\r\n"
        "DTSTAMP:20261101T080000Z\r\nDTSTART:20261104T080000Z\r\nDTEND:20261104T083000Z\r\n"
        "RRULE:FREQ=WEEKLY;BYDAY=WE\r\nSUMMARY:Teambesprechung\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
    offered = services.find_slots(assistant=assistant, when="Mittwoch", now=NOW)  # 09:00 Berlin each Wednesday
    assert [slot["start"] for slot in offered["slots"]] == ["2026-12-02T09:30:00+01:00", "2026-12-08T10:00:00+01:00"]


def test_two_callers_taking_the_last_slot_at_once_one_gets_it_the_other_the_next(practice):
    assistant, url, dav = practice
    assistant.appointment_types[0]["hours"] = {"tue": [{"start": "10:00", "end": "10:30"}],
                                               "wed": [{"start": "09:00", "end": "09:30"}]}
    results, barrier = {}, threading.Barrier(2)

    def caller(number, name):
        from django.db import connection

        barrier.wait()
        try:
            results[name] = book(assistant, TUESDAY_TEN, number=number, name=name)
        finally:
            connection.close()

    threads = [threading.Thread(target=caller, args=args) for args in
               (("+4917612345678", "Lehmann"), ("+4915123456789", "Neumann"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    outcomes = sorted((result["ok"], result.get("error", "")) for result in results.values())
    assert outcomes == [(False, "slot_taken"), (True, "")], results
    loser = next(result for result in results.values() if not result["ok"])
    assert [slot["start"] for slot in loser["slots"]] == ["2026-12-02T09:00:00+01:00", "2026-12-08T10:00:00+01:00"]
    assert [event["start"] for event in events(url, dav)] == [TUESDAY_TEN]
    assert Appointment.objects.count() == 1


def test_a_conditional_write_refuses_to_overwrite_or_to_change_a_changed_event(practice):
    assistant, url, dav = practice
    booked = book(assistant, TUESDAY_TEN)
    row = Appointment.objects.get(pk=booked["appointment"])
    provider = CalDavProvider(row.calendar)
    uid = row.external_id.rsplit("/", 1)[-1].removesuffix(".ics")
    draft = services._draft(services.type_named(assistant, None), TUESDAY_TEN, caller_name="X", caller_e164="+49",
                            call_id="", time_zone="Europe/Berlin", uid=uid)
    with pytest.raises(Conflict):
        provider.create(draft)  # If-None-Match: * on an existing event
    with pytest.raises(Conflict):
        provider.move(Written(row.external_id, '"not-the-etag"'), draft)  # If-Match with a stale ETag
    assert events(url, dav)[0]["summary"] == "Erstgespräch: Lehmann (+4917612345678)"


def test_the_caller_moves_and_cancels_their_own_appointment_only(practice):
    assistant, url, dav = practice
    assert book(assistant, TUESDAY_TEN)["ok"]
    stranger = services.appointment_cancel(assistant=assistant, caller_e164="+4915123456789",
                                           caller_name="Lehmann", now=NOW)
    assert stranger["ok"] is False and stranger["error"] == "appointment_not_found"
    wrong_name = services.appointment_cancel(assistant=assistant, caller_e164="+4917612345678",
                                             caller_name="Neumann", now=NOW)
    assert wrong_name["error"] == "appointment_not_found"
    # the name as the phone line's recognition may spell it the next time: the same sound
    moved = services.appointment_move(assistant=assistant, caller_e164="+4917612345678", caller_name="leman",
                                      start="2026-12-02T09:30", now=NOW)
    assert moved["ok"], moved
    assert moved["said"] == "Mittwoch, den zweiten Dezember, um halb zehn"
    assert [event["start"] for event in events(url, dav)] == [datetime(2026, 12, 2, 9, 30, tzinfo=BERLIN)]
    cancelled = services.appointment_cancel(assistant=assistant, caller_e164="+4917612345678",
                                            caller_name="Lehmann", now=NOW)
    assert cancelled["ok"] and events(url, dav) == []
    assert Appointment.objects.get().status == "cancelled"


@contextlib.contextmanager
def stalling_server(answer: bytes | None):
    """A loopback server that answers `answer` to every request, or (None) never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", free_port()))
    listener.listen(8)
    stop = threading.Event()
    held = []

    def serve():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)
            if answer is not None:
                with contextlib.suppress(OSError):
                    conn.recv(65536)
                    conn.sendall(answer)
                    conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/praxis/"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()


@pytest.mark.parametrize("answer", [None, b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"])
def test_a_calendar_that_fails_or_hangs_is_a_clear_result_in_bounded_time(practice, settings, answer):
    assistant, _url, _dav = practice
    settings.CALENDAR_TIMEOUT_SEC = 0.5
    with stalling_server(answer) as url:
        Appointment.objects.none()
        from calendars_app.models import Calendar

        Calendar.objects.filter(pk=assistant.appointment_types[0]["calendar"]).update(url=url)
        started = time.monotonic()
        offered = services.find_slots(assistant=assistant, when="Dienstag", now=NOW)
        booked = book(assistant, TUESDAY_TEN)
        elapsed = time.monotonic() - started
    assert offered["ok"] is False and offered["error"] == "calendar_unavailable"
    assert booked["ok"] is False and booked["error"] == "calendar_unavailable"
    assert "zurück" in booked["message"] and elapsed < 4


def test_the_tools_book_for_the_calls_caller_and_refuse_another_callers_appointment(practice, tenant_a):
    from calls_app.models import Call
    from tools_app.services import tool_run

    assistant, url, dav = practice
    assistant.tools = ["find_slots", "book_appointment", "cancel_appointment"]
    assistant.save()

    def phone_call(number, carrier_call):
        from calls_app.models import Carrier

        carrier, _ = Carrier.objects.get_or_create(id="sim-cal", defaults={"secret_nonce": "n"})
        return Call.objects.create(tenant=tenant_a, carrier=carrier, carrier_call_id=carrier_call,
                                   direction="inbound", from_e164=number, to_e164="+493055501234",
                                   status="active", started_at=NOW, assistant=assistant)

    first = phone_call("+4917612345678", "c1")
    # the tools run on the real clock: next week's Tuesday (the type's hours)
    today = datetime.now(BERLIN).date()
    tuesday = today + timedelta(days=(1 - today.weekday()) % 7 or 7)
    offered = tool_run(assistant=assistant, call_id=first.pk, name="find_slots",
                       arguments={"when": f"{tuesday}T10:00"})
    assert offered["ok"], offered
    start = offered["result"]["slots"][0]["start"]
    booked = tool_run(assistant=assistant, call_id=first.pk, name="book_appointment",
                      arguments={"start": start, "name": "Lehmann"})
    assert booked["ok"] and booked["result"]["note"].startswith("Termin gebucht: ")
    [event] = events(url, dav)
    assert "+4917612345678" in event["summary"] and f"Anruf {first.pk}" in event["description"]
    other = phone_call("+4915123456789", "c2")  # another caller who knows the name
    refused = tool_run(assistant=assistant, call_id=other.pk, name="cancel_appointment",
                       arguments={"name": "Lehmann"})
    assert refused["ok"] is False and refused["error"] == "appointment_not_found"
    assert len(events(url, dav)) == 1
