"""find_slots over a busy calendar (issue 37, Benchmark): how long the booking tool's
read takes when the practice's CalDAV calendar holds 2,000 events.

A real CalDAV server (Radicale, tests/calendars_app/radicale_server.py) on loopback
holds 2,000 events of 30 minutes (eight a day, weekdays, over the next months); the
calls are `calendars_app.services.find_slots` as the tool calls it (the caller's words
read, the busy times of two weeks fetched with a calendar-query REPORT and parsed, the
slots computed) in a Django process of a throwaway project. Goal: p95 ≤ 150 ms."""
import json
import os
import statistics
import uuid
from datetime import UTC, datetime, timedelta

import requests

from bench.harness import sized, temp_project
from tests.calendars_app.radicale_server import radicale

EVENTS = int(os.environ.get("BENCH_CALENDAR_EVENTS", "2000"))
ROUNDS = int(os.environ.get("BENCH_CALENDAR_ROUNDS", "60"))

_CALLS = """
import json, time
from calendars_app import services
from console.assistants.models import Assistant
from console.assistants.services import assistant_update
from console.tenants.services import tenant_create

tenant = tenant_create(slug="bench", name="Bench", minute_cap=100000)
calendar = services.calendar_create(tenant=tenant, data={{"name": "Praxis", "kind": "caldav", "url": {url!r},
                                                         "username": {user!r}, "password": {password!r}}})
assistant = Assistant.objects.create(tenant=tenant, name="Praxis")
assistant_update(assistant=assistant, data={{"appointmentTypes": [{{
    "name": "Beratung", "durationMinutes": 30, "calendar": calendar.pk, "minNoticeMinutes": 0,
    "hours": {{"mon": "08:00-18:00", "tue": "08:00-18:00", "wed": "08:00-18:00", "thu": "08:00-18:00",
              "fri": "08:00-18:00"}}}}]}})
assistant.refresh_from_db()
wishes = ["nächsten Dienstag vormittag", "übermorgen um halb elf", "in zwei Wochen", "morgen", None]
times = []
for n in range({rounds} + 3):
    started = time.perf_counter()
    result = services.find_slots(assistant=assistant, when=wishes[n % len(wishes)])
    elapsed = time.perf_counter() - started
    assert result["ok"], result
    if n >= 3:  # warm: connections, imports
        times.append(elapsed)
print(json.dumps(times))
"""


def _fill(url: str, user: str, password: str, count: int) -> None:
    """`count` busy events of 30 minutes from tomorrow on, eight per weekday: one PUT of
    the whole collection (Radicale splits it into its events; one PUT per event would
    take minutes, each rewriting the collection's history)."""
    day = datetime.now(UTC).replace(hour=7, minute=0, second=0, microsecond=0) + timedelta(days=1)
    parts = ["BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//bench//DE\r\n"]
    made = 0
    while made < count:
        if day.weekday() < 5:
            for slot in range(min(8, count - made)):
                start = day + timedelta(hours=slot)
                parts.append(f"BEGIN:VEVENT\r\nUID:{uuid.uuid4().hex}\r\nDTSTAMP:20260101T000000Z\r\n"
                             f"DTSTART:{start:%Y%m%dT%H%M%SZ}\r\nDTEND:{start + timedelta(minutes=30):%Y%m%dT%H%M%SZ}"
                             f"\r\nSUMMARY:Belegt {made}\r\nEND:VEVENT\r\n")
                made += 1
        day += timedelta(days=1)
    parts.append("END:VCALENDAR\r\n")
    answer = requests.put(url, data="".join(parts).encode(), auth=(user, password), timeout=300,
                          headers={"Content-Type": "text/calendar"})
    answer.raise_for_status()


def find_slots_latency(load):
    """find_slots over a CalDAV calendar of 2,000 events (Radicale on loopback)"""
    events = sized(EVENTS, 40)
    with radicale() as dav:
        url = dav.make_calendar("praxis")
        _fill(url, dav.user, dav.password, events)
        with temp_project() as project:
            project.env.update(OUTBOUND_ALLOW_PRIVATE_TARGETS="1")
            out = project.django(_CALLS.format(url=url, user=dav.user, password=dav.password,
                                               rounds=sized(ROUNDS, 2)))
    times = json.loads(out.strip().splitlines()[-1])
    p95 = statistics.quantiles(times, n=20)[18] * 1000 if len(times) > 1 else times[0] * 1000
    return [{"events in the calendar": events, "calls": len(times),
             "p50 ms": f"{statistics.median(times) * 1000:.1f}", "p95 ms": f"{p95:.1f}", "goal p95 ms": "150"}]
