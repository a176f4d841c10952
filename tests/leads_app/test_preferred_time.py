"""Preferred-time tokens resolved on the tenant's wall clock."""
from datetime import datetime, timedelta, timezone

import pytest

from leads_app.preferred_time import InvalidToken, parse

BERLIN = "Europe/Berlin"
# 2025-03-29 is the Saturday before the switch to summer time in Berlin (UTC+1 → UTC+2).
SATURDAY_0730_BERLIN = datetime(2025, 3, 29, 6, 30, tzinfo=timezone.utc)


def resolve(token, now=SATURDAY_0730_BERLIN, time_zone=BERLIN):
    return parse(token).resolve(now=now, time_zone=time_zone)


def test_asap_is_now():
    assert resolve("asap") == SATURDAY_0730_BERLIN


@pytest.mark.parametrize("token, ahead", [("+1m", timedelta(minutes=1)), ("+90m", timedelta(minutes=90)),
                                          ("+3h", timedelta(hours=3)), ("+10080m", timedelta(days=7))])
def test_relative_tokens_count_from_now(token, ahead):
    assert resolve(token) == SATURDAY_0730_BERLIN + ahead


def test_today_am_starts_at_nine_berlin_time():
    assert resolve("today-am") == datetime(2025, 3, 29, 8, 0, tzinfo=timezone.utc)  # 09:00 CET


def test_tomorrow_pm_is_two_pm_after_the_switch_to_summer_time():
    assert resolve("tomorrow-pm") == datetime(2025, 3, 30, 12, 0, tzinfo=timezone.utc)  # 14:00 CEST


def test_day_part_already_begun_resolves_to_now():
    eleven_berlin = datetime(2025, 3, 29, 10, 0, tzinfo=timezone.utc)

    assert resolve("today-am", now=eleven_berlin) == eleven_berlin
    assert resolve("today-pm", now=eleven_berlin) == datetime(2025, 3, 29, 13, 0, tzinfo=timezone.utc)


def test_today_is_the_tenants_day_not_the_servers():
    """At 23:30 UTC it is already tomorrow in Berlin, but still today in New York."""
    late_utc = datetime(2025, 6, 10, 23, 30, tzinfo=timezone.utc)

    assert resolve("tomorrow-am", now=late_utc) == datetime(2025, 6, 12, 7, 0, tzinfo=timezone.utc)
    assert resolve("tomorrow-am", now=late_utc, time_zone="America/New_York") == datetime(
        2025, 6, 11, 13, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("token", ["+10081m", "+169h", "+0h", "now", "tomorrow-noon", " asap"])
def test_tokens_outside_the_list_are_refused_with_the_list(token):
    with pytest.raises(InvalidToken, match="asap, \\+<n>m"):
        parse(token)
