"""find_slots over a busy calendar (issue 37, Benchmark): how long the booking tool's
read takes when the practice's CalDAV calendar holds 2,000 events, and what a booking
turn by voice adds to a turn without tools (`booking_turn_latency`, below).

A real CalDAV server (Radicale, tests/calendars_app/radicale_server.py) on loopback
holds 2,000 events of 30 minutes (eight a day, weekdays, over the next months); the
calls are `calendars_app.services.find_slots` as the tool calls it (the caller's words
read, the calendar's ctag asked with a PROPFIND, the busy times of two weeks fetched with
a calendar-query REPORT and parsed unless the ctag says the copy kept in Django's cache is
current, the slots computed) in a Django process of a throwaway project, in rounds: an
event written into the calendar by someone else (a PUT to Radicale, not timed), a call
that must read again ("cold"), a call on the unchanged calendar ("warm").
Goal: p95 ≤ 150 ms."""
import asyncio
import json
import os
import statistics
import uuid
from datetime import UTC, datetime, timedelta

import requests

from bench.harness import sized, stop, temp_project
from tests.calendars_app.radicale_server import radicale

EVENTS = int(os.environ.get("BENCH_CALENDAR_EVENTS", "2000"))
ROUNDS = int(os.environ.get("BENCH_CALENDAR_ROUNDS", "60"))

_CALLS = """
import json, time
from datetime import timedelta
import requests
from django.utils import timezone
from calendars_app import services
from calendars_app.kinds import provider_of
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
session = requests.Session()
session.auth = ({user!r}, {password!r})
times = {{"cold": [], "warm": [], "fresh": [], "ctag": []}}
CTAG = ('<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:cs="http://calendarserver.org/ns/"><d:prop>'
        '<cs:getctag/></d:prop></d:propfind>')
for n in range({rounds} + 3):
    # someone else's change: the calendar's ctag moves on
    event = ("BEGIN:VCALENDAR\\r\\nVERSION:2.0\\r\\nPRODID:-//bench//DE\\r\\nBEGIN:VEVENT\\r\\nUID:other-%d\\r\\n"
             "DTSTAMP:20260101T000000Z\\r\\nDTSTART:20300101T080000Z\\r\\nDTEND:20300101T083000Z\\r\\n"
             "SUMMARY:Privat\\r\\nEND:VEVENT\\r\\nEND:VCALENDAR\\r\\n" % n)
    session.put({url!r} + "other-%d.ics" % n, data=event.encode(), headers={{"Content-Type": "text/calendar"}},
                timeout=60).raise_for_status()
    for case in ("cold", "warm"):
        started = time.perf_counter()
        result = services.find_slots(assistant=assistant, when=wishes[n % len(wishes)])
        elapsed = time.perf_counter() - started
        assert result["ok"], result
        if n >= 3:  # warm: connections, imports
            times[case].append(elapsed)
    # the read a booking makes right before its write (find_slots' own before it kept a copy)
    started = time.perf_counter()
    provider_of(calendar).busy(timezone.now() - timedelta(hours=4), timezone.now() + timedelta(days=14, hours=4))
    if n >= 3:
        times["fresh"].append(time.perf_counter() - started)
    # the server's share: Radicale computes the ctag from every event of the collection
    started = time.perf_counter()
    session.request("PROPFIND", {url!r}, data=CTAG, headers={{"Depth": "0"}}, timeout=60).raise_for_status()
    if n >= 3:
        times["ctag"].append(time.perf_counter() - started)
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
    measured = json.loads(out.strip().splitlines()[-1])
    labels = {"warm": "warm: calendar unchanged (PROPFIND of the ctag, the kept copy)",
              "cold": "cold: changed by someone else (PROPFIND, REPORT, parsing)",
              "fresh": "uncached: the booking's read of two weeks (REPORT, parsing), no slots",
              "ctag": "Radicale's share: the ctag PROPFIND alone (requests, no find_slots)"}
    return [{"call": labels[case], "events in the calendar": events, "calls": len(times),
             "p50 ms": f"{statistics.median(times) * 1000:.1f}", "p95 ms": f"{_p95(times) * 1000:.1f}",
             "goal p95 ms": "150"} for case, times in measured.items()]


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18] if len(values) > 1 else values[0]


# --- The booking turn by voice --------------------------------------------------------------

BOOKING = "Ich hätte gern einen Termin nächste Woche Dienstag vormittag."
# As long as the booking wish, no tool called, and no comma: eSpeak pauses there long
# enough for the end of a turn, and the agent would answer half the question.
PLAIN = "Was kostet bei Ihnen eine Beratung für einen neuen Kunden?"
# One turn per session: a wish said again after the offer is heard as choosing one of its
# slots (the caller's "Dienstag vormittag" fits the first), and the next as a name.
TURNS = 20

_PRACTICE = """
from calendars_app import services
from console.assistants.models import Assistant
from console.assistants.services import assistant_update
from console.tenants.models import Tenant

tenant = Tenant.objects.get(slug="bench")
calendar = services.calendar_create(tenant=tenant, data={{"name": "Praxis", "kind": "caldav", "url": {url!r},
                                                         "username": {user!r}, "password": {password!r}}})
# the tenant's only assistant answers the sessions: the booking tools, no knowledge to look up
assistant = Assistant.objects.create(tenant=tenant, name="Praxis",
                                     tools=["find_slots", "book_appointment", "create_callback", "end_call"])
assistant_update(assistant=assistant, data={{"appointmentTypes": [{{
    "name": "Beratung", "durationMinutes": 30, "calendar": calendar.pk, "minNoticeMinutes": 60,
    "hours": {{day: "08:00-18:00" for day in ("mon", "tue", "wed", "thu", "fri")}}}}]}})
"""


def booking_turn_latency(load):
    """A booking turn by voice (the offline policy calls find_slots on Radicale's 2,000 events) vs a turn without tools: end of utterance → first reply audio"""
    from bench.bench_agent import STAGES, _bench_tenant, _caller, _grant, _served, speeches

    events = sized(EVENTS, 40)
    kinds = (("booking: find_slots, two slots offered", BOOKING), ("no tools: a question answered directly", PLAIN))
    seconds = {label: [] for label, _ in kinds}
    replies = {label: [] for label, _ in kinds}
    servers = []
    with radicale() as dav:
        url = dav.make_calendar("praxis")
        _fill(url, dav.user, dav.password, events)
        with temp_project() as project:
            project.env.update(OUTBOUND_ALLOW_PRIVATE_TARGETS="1")
            key = _bench_tenant(project)
            project.django(_PRACTICE.format(url=url, user=dav.user, password=dav.password))
            clips, made_by = speeches(project, [text for _, text in kinds])
            print(f"Caller's speech: {made_by}", flush=True)
            # The agent's audio goes out as fast as it is made instead of at the pace it is
            # heard: the turn's figure (its first audio) is the same, the turns follow
            # each other sooner.
            servers.append(_served(project, AGENT_SPEECH_LEAD_SEC="600"))
            base = servers[0][1]
            try:
                for clip in clips:  # the recogniser, the end-of-turn model, the kept busy times (not counted)
                    asyncio.run(_caller(_grant(base, key), [clip], 1))
                # the two kinds interleaved: a busy machine's changing load falls on both alike
                for _ in range(sized(TURNS)):
                    for (label, _text), clip in zip(kinds, clips, strict=True):
                        seconds[label] += asyncio.run(_caller(_grant(base, key), [clip], 1, replies=replies[label]))
            finally:
                for server, _base, _log in servers:
                    stop(server)
    rows = []
    for index, (label, _text) in enumerate(kinds):
        # A turn counts as its kind by what the agent said: slots offered, or not (Whisper
        # may hear the booking wish without its day; the agent then asks for one), and
        # only if the agent answered the whole utterance, not a part of it before its end.
        turns = []
        for (first, latency), (own, text) in zip(seconds[label], replies[label], strict=True):
            if ("anbieten" in text) == (index == 0) and first > 0:
                turns.append((first, latency, own))
            else:
                print(f"  not counted as a {label!r} turn: {first:.2f} s, {text!r}", flush=True)
        rows.append({"turn": label, "turns": f"{len(turns)} of {len(seconds[label])}", **_figures(turns, STAGES)})
        print(rows[-1], flush=True)
    added = {"turn": "booking − no tools", "turns": ""}
    for column in rows[0]:
        first, second = rows[0][column], rows[1][column]
        if column not in added:
            added[column] = round(first - second, 2) if first != "" and second != "" else ""
    return [*rows, added]


def _figures(turns, stages):
    """p50/p95 of the first audio and of the reply's own audio, the server's stage medians;
    empty where no turn counted (a smoke run's one turn misheard)."""
    from bench.bench_agent import _percentile

    firsts, own = [first for first, _, _ in turns], [value for _, _, value in turns]
    measured = [latency for _, latency, _ in turns if latency]
    figures = {"p50 s": "", "p95 s": "", "reply p50 s": "", "reply p95 s": ""}
    if turns:
        figures = {"p50 s": round(statistics.median(firsts), 2), "p95 s": round(_percentile(firsts, 0.95), 2),
                   # after the filler, where the reply took long enough to get one
                   "reply p50 s": round(statistics.median(own), 2), "reply p95 s": round(_percentile(own, 0.95), 2)}
    return {**figures, **{f"{stage[:-2]} ms (median)": round(statistics.median(m[stage] for m in measured))
                          if measured else "" for stage in stages}}
