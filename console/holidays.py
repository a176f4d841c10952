"""The public holidays of the German federal states (the `holidays` package): the days
no campaign calls (campaigns_app.window) and no appointment is offered
(calendars_app.slots). Core, because both use it (docs/architecture.md)."""
from datetime import date
from functools import lru_cache

import holidays


@lru_cache(maxsize=256)
def holidays_of(state: str, year: int) -> dict[date, str]:
    """{date: German name} of the public holidays of `state` (e.g. "BY"; "" for the
    nationwide ones only) in `year`."""
    return dict(holidays.country_holidays("DE", subdiv=state or None, years=year, language="de"))


def holiday_name(day: date, state: str) -> str | None:
    """The German name of the public holiday `day` is in `state` ("" for the nationwide ones), or None."""
    return holidays_of(state or "", day.year).get(day)
