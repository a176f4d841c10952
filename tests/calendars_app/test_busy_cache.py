"""find_slots keeps a CalDAV calendar's busy times while the collection's ctag says it
has not changed, in a real CalDAV server (Radicale): the requests counted are those
Radicale itself logged. A change made by someone else (the `caldav` client, not us) is
seen by the next offer; a booking reads afresh whatever is kept; a server without a ctag
(Radicale behind a loopback forwarder that leaves getctag out of its answers) is read
each time."""
import caldav
import pytest

from calendars_app import services
from console.assistants.models import Assistant
from console.assistants.services import assistant_update
from tests.calendars_app.radicale_server import without_ctag
from tests.calendars_app.test_booking import NOW, TUESDAY_TEN, book, practice  # noqa: F401 - the practice fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PRIVATE_AT_TEN = (  # Tuesday 10:00–10:45 in Berlin, written into the calendar by the practice itself
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Praxis//DE\r\nBEGIN:VEVENT\r\nUID:privat-1\r\n"
    "DTSTAMP:20261120T080000Z\r\nDTSTART:20261201T090000Z\r\nDTEND:20261201T094500Z\r\n"
    "SUMMARY:Chefin privat\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")


def offered(assistant, when="Dienstag um zehn"):
    result = services.find_slots(assistant=assistant, when=when, now=NOW)
    assert result["ok"], result
    return [slot["start"] for slot in result["slots"]]


def written_by_someone_else(url, dav):
    client = caldav.DAVClient(url=url, username=dav.user, password=dav.password)
    client.calendar(url=url).save_event(PRIVATE_AT_TEN)


def test_an_unchanged_calendar_is_asked_for_its_ctag_and_not_read_again(practice):  # noqa: F811
    assistant, url, dav = practice
    first = offered(assistant)
    reports, propfinds = dav.requests_to("REPORT", url), dav.requests_to("PROPFIND", url)
    assert reports == 1
    for _ in range(3):
        assert offered(assistant) == first
    assert dav.requests_to("REPORT", url) == reports
    assert dav.requests_to("PROPFIND", url) == propfinds + 3


def test_other_days_of_an_unchanged_calendar_are_read_once_and_kept_beside_the_first(practice):  # noqa: F811
    assistant, url, dav = practice
    tuesday, later = offered(assistant), offered(assistant, "in drei Wochen")
    assert tuesday[0] == "2026-12-01T10:00:00+01:00" and later[0].startswith("2026-12-22T")
    assert dav.requests_to("REPORT", url) == 2
    assert offered(assistant) == tuesday and offered(assistant, "in drei Wochen") == later
    assert dav.requests_to("REPORT", url) == 2


def test_an_event_someone_else_adds_is_seen_by_the_next_offer(practice):  # noqa: F811
    assistant, url, dav = practice
    assert offered(assistant)[0] == "2026-12-01T10:00:00+01:00"
    written_by_someone_else(url, dav)
    assert "2026-12-01T10:00:00+01:00" not in offered(assistant)
    assert dav.requests_to("REPORT", url) == 2


def test_a_booking_reads_the_calendar_afresh_and_its_own_event_is_not_offered_again(practice):  # noqa: F811
    assistant, url, dav = practice
    assert offered(assistant)[0] == "2026-12-01T10:00:00+01:00"
    offered(assistant)  # the kept copy is current
    reports = dav.requests_to("REPORT", url)
    assert book(assistant, TUESDAY_TEN)["ok"]
    assert dav.requests_to("REPORT", url) == reports + 1  # the booking's own read before its write
    assert "2026-12-01T10:00:00+01:00" not in offered(assistant)


def test_a_server_without_a_ctag_is_read_for_every_offer(api_a, tenant_a, dav, calendar_url):
    with without_ctag(dav) as base:
        url = base.rstrip("/") + "/" + calendar_url.split("/", 3)[3]
        calendar = api_a.post("/v2/calendars", {"name": "Praxis", "kind": "caldav", "url": url,
                                                "username": dav.user, "password": dav.password}, format="json")
        assert calendar.status_code == 201, calendar.content
        assistant = Assistant.objects.create(tenant=tenant_a, name="Praxis")
        assistant_update(assistant=assistant, data={"appointmentTypes": [{
            "name": "Erstgespräch", "durationMinutes": 30, "calendar": calendar.json()["id"],
            "hours": {"tue": {"start": "10:00", "end": "11:00"}}, "minNoticeMinutes": 60}]})
        assistant.refresh_from_db()
        first = offered(assistant)
        assert first[0] == "2026-12-01T10:00:00+01:00"
        assert offered(assistant) == first
        assert dav.requests_to("REPORT", calendar_url) == 2
        written_by_someone_else(calendar_url, dav)
        assert "2026-12-01T10:00:00+01:00" not in offered(assistant)
        assert dav.requests_to("REPORT", calendar_url) == 3
