"""The kinds of calendars (CalDAV, Microsoft 365 Graph, Cal.com): each one a
`Provider` (kinds/base.py) that reads busy times and writes events."""
from calendars_app.kinds.base import Provider
from calendars_app.models import Calendar


def provider_of(calendar: Calendar) -> Provider:
    from calendars_app.kinds import calcom, caldav, graph

    kinds: dict[str, type[Provider]] = {"caldav": caldav.CalDavProvider, "graph": graph.GraphProvider,
                                        "calcom": calcom.CalComProvider}
    return kinds[calendar.kind](calendar)
