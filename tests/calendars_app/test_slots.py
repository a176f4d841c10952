"""Free slots without a calendar: the tenant's wall clock across the change to winter
time, a holiday of the federal state, the minimum notice, the cap per day; German
wishes and the date said back in words."""
from datetime import UTC, date, datetime, time
from zoneinfo import ZoneInfo

import pytest

from calendars_app.appointment_types import AppointmentType
from calendars_app.slots import free_starts
from calendars_app.spoken import Wish, said_in_words, wish_of

BERLIN = ZoneInfo("Europe/Berlin")


def kind(**more):
    values = dict(name="Beratung", duration=30, buffer_before=0, buffer_after=0, calendar_id="cal_x",
                  hours={day: [("09:00", "10:00")] for day in ("mon", "tue", "wed", "thu", "fri")}, min_notice=0,
                  max_days_ahead=60, max_per_day=None, holidays_closed=True)
    values.update(more)
    return AppointmentType(**values)


def starts(appointment_type, wish, now, **more):
    return free_starts(appointment_type, wish, now=now, time_zone="Europe/Berlin", state=more.pop("state", ""),
                       busy=more.pop("busy", []), per_day=more.pop("per_day", {}), limit=more.pop("limit", 2))


def test_nine_in_berlin_is_seven_utc_before_and_eight_after_the_change_to_winter_time():
    friday = datetime(2026, 10, 23, 12, 0, tzinfo=UTC)
    assert starts(kind(), Wish(day=date(2026, 10, 23)), friday, limit=4)[:2] == [
        datetime(2026, 10, 26, 8, 0, tzinfo=UTC), datetime(2026, 10, 26, 8, 30, tzinfo=UTC)]
    thursday = datetime(2026, 10, 22, 6, 0, tzinfo=UTC)
    assert starts(kind(), Wish(), thursday)[0] == datetime(2026, 10, 22, 7, 0, tzinfo=UTC)


@pytest.mark.parametrize(("state", "first"), [("BY", date(2027, 1, 7)), ("BE", date(2027, 1, 6))])
def test_a_holiday_of_the_tenants_state_is_closed(state, first):
    now = datetime(2027, 1, 5, 12, 0, tzinfo=BERLIN)  # Heilige Drei Könige: Bavaria, not Berlin
    found = starts(kind(), Wish(day=date(2027, 1, 6)), now, state=state)
    assert found[0].astimezone(BERLIN).date() == first
    assert starts(kind(holidays_closed=False), Wish(day=date(2027, 1, 6)), now, state="BY")[0].astimezone(
        BERLIN).date() == date(2027, 1, 6)


def test_the_minimum_notice_busy_times_buffers_and_the_cap_per_day():
    now = datetime(2026, 12, 1, 8, 45, tzinfo=BERLIN)
    assert starts(kind(min_notice=30), Wish(), now, limit=1)[0] == datetime(2026, 12, 1, 9, 30, tzinfo=BERLIN)
    busy = [(datetime(2026, 12, 2, 9, 40, tzinfo=BERLIN), datetime(2026, 12, 2, 9, 50, tzinfo=BERLIN))]
    later = datetime(2026, 12, 1, 18, 0, tzinfo=BERLIN)
    # 9:00–9:30 plus a 15-minute buffer meets 9:40: the next free start is the next day's
    assert starts(kind(buffer_after=15), Wish(), later, busy=busy, limit=1)[0] == datetime(2026, 12, 3, 9, 0,
                                                                                         tzinfo=BERLIN)
    assert starts(kind(buffer_after=0), Wish(), later, busy=busy, limit=1)[0] == datetime(2026, 12, 2, 9, 0,
                                                                                        tzinfo=BERLIN)
    capped = starts(kind(max_per_day=1), Wish(), later, per_day={date(2026, 12, 2): 1}, limit=1)
    assert capped[0].astimezone(BERLIN).date() == date(2026, 12, 3)


NOW = datetime(2026, 11, 26, 9, 0, tzinfo=BERLIN)  # a Thursday


@pytest.mark.parametrize(("words", "wish"), [
    ("nächsten Dienstag", Wish(day=date(2026, 12, 1))),
    ("übermorgen um halb elf", Wish(day=date(2026, 11, 28), at=time(10, 30))),
    ("Dienstag vormittag", Wish(day=date(2026, 12, 1), part=(time(7, 0), time(12, 0)))),
    ("in zwei Wochen", Wish(day=date(2026, 12, 10))),
    ("am 3.12.", Wish(day=date(2026, 12, 3))),
    ("nächste Woche am Donnerstag um zehn Uhr", Wish(day=date(2026, 12, 3), at=time(10, 0))),
    ("2026-12-03T10:30", Wish(day=date(2026, 12, 3), at=time(10, 30))),
])
def test_german_wishes(words, wish):
    assert wish_of(words, now=NOW, time_zone="Europe/Berlin") == wish


@pytest.mark.parametrize(("moment", "words"), [
    (datetime(2026, 12, 3, 10, 30), "Donnerstag, den dritten Dezember, um halb elf"),
    (datetime(2026, 12, 1, 10, 0), "Dienstag, den ersten Dezember, um zehn Uhr"),
    (datetime(2026, 10, 26, 9, 15), "Montag, den sechsundzwanzigsten Oktober, um Viertel nach neun"),
    (datetime(2026, 12, 31, 14, 20), "Donnerstag, den einunddreißigsten Dezember, um vierzehn Uhr zwanzig"),
])
def test_the_date_said_back_in_words(moment, words):
    assert said_in_words(moment.replace(tzinfo=BERLIN), time_zone="Europe/Berlin") == words
