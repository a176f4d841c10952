"""A caller's words for a callback time ("morgen Vormittag", "Dienstag um 10 Uhr"),
read on the tenant's clock, as the assistant's create_callback passes them; words that
name no moment are not guessed."""
import datetime as dt
import zoneinfo

import pytest

from leads_app.preferred_time import from_words

BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")
# Tuesday 24 November 2026, 11:30 in Berlin.
NOW = dt.datetime(2026, 11, 24, 10, 30, tzinfo=dt.timezone.utc)


def read(words, now=NOW, zone="Europe/Berlin"):
    found = from_words(words, now=now, time_zone=zone)
    return None if found is None else (found.token, found.resolve(now=now, time_zone=zone).astimezone(BERLIN))


def at(day, hour, minute=0):
    return dt.datetime(2026, 11, day, hour, minute, tzinfo=BERLIN)


@pytest.mark.parametrize(("words", "token", "moment"), [
    ("morgen Vormittag", "tomorrow-am", at(25, 9)),
    ("morgen früh", "tomorrow-am", at(25, 9)),
    ("heute Nachmittag", "today-pm", at(24, 14)),
    ("tomorrow-pm", "tomorrow-pm", at(25, 14)),
    ("so bald wie möglich", "asap", at(24, 11, 30)),
    ("in zwei Stunden", "+2h", at(24, 13, 30)),
    ("in 30 Minuten", "+30m", at(24, 12)),
    ("in einer halben Stunde", "+30m", at(24, 12)),
    ("Donnerstag 14:30", "", at(26, 14, 30)),
    ("Freitag gegen 16 Uhr 30", "", at(27, 16, 30)),
    ("morgen nachmittag um 3", "", at(25, 15)),
    ("um 15 Uhr", "", at(24, 15)),
    ("um 10", "", at(25, 10)),  # said at 11:30: tomorrow
    ("Dienstag um 10 Uhr", "", dt.datetime(2026, 12, 1, 10, tzinfo=BERLIN)),  # today is Tuesday, 10:00 is past
    ("at 3 pm tomorrow", "", at(25, 15)),
    ("2026-11-25T10:00:00+01:00", "", at(25, 10)),
])
def test_words_that_name_a_moment(words, token, moment):
    assert read(words) == (token, moment)


@pytest.mark.parametrize("words", ["irgendwann", "nächste Woche", "", "2026-11-01T10:00:00+01:00",
                                   "2027-03-01T10:00:00+01:00", "in 900 Stunden"])
def test_words_that_name_none_are_not_guessed(words):
    assert read(words) is None


def test_the_tenants_clock_decides():
    # 23:30 UTC is already Wednesday in Berlin: "morgen" is Thursday there.
    late = dt.datetime(2026, 11, 24, 23, 30, tzinfo=dt.timezone.utc)
    assert read("morgen um 9", now=late)[1] == at(26, 9)
    assert read("morgen um 9", now=late, zone="America/New_York")[1].astimezone(
        zoneinfo.ZoneInfo("America/New_York")).date() == dt.date(2026, 11, 25)
