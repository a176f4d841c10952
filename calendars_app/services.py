"""The tenant's calendars (connect with a check, change, remove) and the appointments
its assistants book in them: `find_slots`, `appointment_book`, `appointment_move`,
`appointment_cancel` (docs/api.md, "Calendars" and "Appointment types").

No double booking: the bookings of one calendar take turns (a lease on its row, the
same on SQLite and PostgreSQL, held only while the calendar is read and written, never
in a database transaction), the busy times are read again right before the write, and
the write itself is conditional (CalDAV `If-None-Match: *` / `If-Match`). Whoever
loses a race is offered the next free slots instead.

A booking service never raises for what the calendar does: it answers
`{"ok": true, …}` or `{"ok": false, "error": code, "message": German text}`, within
a few times CALENDAR_TIMEOUT_SEC, so the agent can apologise and offer a callback.
"""
import secrets
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from calendars_app import slots
from calendars_app.appointment_types import AppointmentType, type_named, types_of
from calendars_app.errors import CalendarCheckFailed, CalendarInUse, CalendarUrlRefused
from calendars_app.kinds import provider_of
from calendars_app.kinds.base import (
    Conflict,
    EventDraft,
    NotFound,
    ProviderError,
    Unauthorized,
    Written,
    secrets_of,
    secrets_seal,
)
from calendars_app.kinds.fields import ALL_FIELDS, KIND_FIELDS
from calendars_app.models import Appointment, Calendar
from calendars_app.names import name_matches
from calendars_app.selectors import appointments_of
from calendars_app.spoken import Wish, said_in_figures, said_in_words, wish_of
from console import outbound
from console import tool_codes as codes
from console.assistants.models import Assistant
from console.errors import ValidationFailed
from console.quotas import quota_take
from console.tenants.models import Tenant

API_FIELDS = ("name", "kind", *ALL_FIELDS)
SLOTS_OFFERED = 2
MAX_NAME = 200


# --- Calendars ---------------------------------------------------------------------------

def calendar_values(*, tenant: Tenant, data: Mapping[str, Any],
                    instance: Calendar | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """(the model's values, the secrets) for the API fields in `data`, checked; a change
    keeps what it does not name (its kind stays)."""
    problems: dict[str, list[str]] = {}
    for key in sorted(set(data) - set(API_FIELDS)):
        problems[key] = [f"Unbekanntes Feld. Erlaubt: {', '.join(API_FIELDS)}."]
    kind = instance.kind if instance is not None else data.get("kind")
    if instance is not None and "kind" in data and data["kind"] != kind:
        problems["kind"] = ["Die Art eines Kalenders bleibt; verbinden Sie einen neuen."]
    if kind not in KIND_FIELDS:
        problems["kind"] = [f"Eine von: {', '.join(KIND_FIELDS)}."]
        raise ValidationFailed(details=problems)
    values: dict[str, Any] = {"kind": kind}
    if "name" in data or instance is None:
        name = data.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME or "\x00" in name:
            problems["name"] = [f"Ein Name von 1 bis {MAX_NAME} Zeichen."]
        else:
            values["name"] = name.strip()
    current = dict(instance.settings) if instance is not None else {}
    current_secrets = secrets_of(instance) if instance is not None else {}
    if instance is not None:
        current["url"] = instance.url
    stored: dict[str, Any] = {}
    kept_secrets: dict[str, str] = {}
    for field in KIND_FIELDS[kind]:
        given = data.get(field.name)
        if given is None or given == "":
            value = current_secrets.get(field.name) if field.secret else current.get(field.name)
        else:
            value = given
        if field.name == "eventTypeId" and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not value:
            if field.required:
                problems[field.name] = ["Dieses Feld wird gebraucht."]
            continue
        if not isinstance(value, str) or len(value) > 2000 or "\x00" in value:
            problems[field.name] = ["Ein Text von höchstens 2.000 Zeichen."]
            continue
        if field.secret:
            kept_secrets[field.name] = value
        else:
            stored[field.name] = value.strip()
    if problems:
        raise ValidationFailed(details=problems)
    if "url" in stored:
        values["url"] = outbound.url_admit(stored.pop("url"), refused=CalendarUrlRefused)
    values["settings"] = {**stored, "timeZone": tenant.time_zone}
    return values, kept_secrets


def calendar_check(calendar: Calendar) -> None:
    """CalendarCheckFailed (400) saying in German what is wrong, unless the calendar is
    reachable, lets us in and is found."""
    try:
        provider_of(calendar).check()
    except Unauthorized as exc:
        raise CalendarCheckFailed(str(exc), details={"reason": "unauthorized"}) from None
    except NotFound as exc:
        raise CalendarCheckFailed(str(exc), details={"reason": "not_found"}) from None
    except ProviderError as exc:
        raise CalendarCheckFailed(str(exc), details={"reason": "unreachable"}) from None


def calendar_create(*, tenant: Tenant, data: Mapping[str, Any]) -> Calendar:
    """A calendar connected after its check (outside any transaction: the check is a
    request to the calendar); then, in one transaction, the tenant's cap
    (TENANT_MAX_CALENDARS, 409 `tenant_limit_reached`) and the row."""
    values, kept_secrets = calendar_values(tenant=tenant, data=data)
    calendar = Calendar(tenant=tenant, secrets_sealed=secrets_seal(kept_secrets), **values)
    calendar_check(calendar)
    calendar.checked_at = timezone.now()
    with transaction.atomic():
        quota_take(tenant=tenant, name="calendars")
        calendar.save()
    return calendar


def calendar_update(*, calendar: Calendar, data: Mapping[str, Any]) -> Calendar:
    values, kept_secrets = calendar_values(tenant=calendar.tenant, data=data, instance=calendar)
    for name, value in values.items():
        setattr(calendar, name, value)
    calendar.secrets_sealed = secrets_seal(kept_secrets)
    calendar_check(calendar)
    calendar.checked_at = timezone.now()
    calendar.save()
    return calendar


def assistants_booking_in(calendar: Calendar) -> list[dict[str, str]]:
    """The assistants with an appointment type in `calendar` ({id, name})."""
    found = []
    for assistant in Assistant.objects.for_tenant(calendar.tenant).only("id", "name", "appointment_types"):
        if any(kind.get("calendar") == calendar.pk for kind in assistant.appointment_types or []):
            found.append({"id": assistant.pk, "name": assistant.name})
    return found


def calendar_delete(*, calendar: Calendar) -> None:
    using = assistants_booking_in(calendar)
    if using:
        raise CalendarInUse(details={"assistants": using})
    calendar.delete()


# --- Taking turns ------------------------------------------------------------------------

class TurnBusy(Exception):
    pass


def _hold() -> timedelta:
    # a booking reads and writes, with a HEAD for an ETag at most: three requests
    return timedelta(seconds=3 * float(settings.CALENDAR_TIMEOUT_SEC) + 2)


@contextmanager
def calendar_turn(calendar: Calendar) -> Iterator[None]:
    """Holds the calendar's lease while the block runs: another booking of the same
    calendar waits for it (at most as long as a lease lasts: one that a dead worker
    left runs out), in any process, on SQLite and PostgreSQL alike."""
    token = secrets.token_hex(8)
    deadline = time.monotonic() + _hold().total_seconds()
    while True:
        now = timezone.now()
        with transaction.atomic():
            taken = Calendar.objects.filter(pk=calendar.pk).filter(
                Q(lease_until__isnull=True) | Q(lease_until__lt=now)).update(lease_token=token,
                                                                            lease_until=now + _hold())
        if taken:
            break
        if time.monotonic() > deadline:
            raise TurnBusy()
        time.sleep(0.02)  # another booking of this calendar is under way: wait for its turn to end
    try:
        yield
    finally:
        Calendar.objects.filter(pk=calendar.pk, lease_token=token).update(lease_token="", lease_until=None)


# --- Appointments ------------------------------------------------------------------------

def _failed(code: str, message: str, **more: Any) -> dict[str, Any]:
    return {"ok": False, "error": code, "message": message, **more}


UNAVAILABLE = ("Der Kalender ist gerade nicht erreichbar. Entschuldigen Sie bitte; wir rufen Sie gern zurück, "
               "um den Termin zu vereinbaren.")


def _context(assistant: Any, type_name: str | None) -> tuple[AppointmentType, Calendar] | dict[str, Any]:
    kind = type_named(assistant, type_name)
    if kind is None:
        names = [known.name for known in types_of(assistant)]
        if not names:
            return _failed(codes.NO_APPOINTMENT_TYPES, "Dieser Assistent vergibt keine Termine.")
        return _failed(codes.APPOINTMENT_TYPE_UNKNOWN, "Welche Terminart möchten Sie: " + ", ".join(names) + "?",
                       types=names)
    calendar = Calendar.objects.for_tenant(assistant.tenant).filter(pk=kind.calendar_id).first()
    if calendar is None:
        return _failed(codes.CALENDAR_MISSING, "Für diese Terminart ist kein Kalender verbunden.")
    return kind, calendar


def _per_day(calendar: Calendar, kind: AppointmentType, span: slots.Span, zone: ZoneInfo) -> dict[date, int]:
    counts: dict[date, int] = {}
    if kind.max_per_day is None:
        return counts
    rows = Appointment.objects.filter(calendar=calendar, type_name=kind.name, status=Appointment.Status.BOOKED,
                                      starts_at__gte=span[0] - timedelta(days=1), starts_at__lt=span[1])
    for starts_at in rows.values_list("starts_at", flat=True):
        day = starts_at.astimezone(zone).date()
        counts[day] = counts.get(day, 0) + 1
    return counts


def _offer(starts: list[datetime], zone_name: str) -> list[dict[str, str]]:
    return [{"start": start.astimezone(ZoneInfo(zone_name)).isoformat(),
             "said": said_in_words(start, time_zone=zone_name)} for start in starts]


def _free(assistant: Any, kind: AppointmentType, calendar: Calendar, wish: Wish, *, now: datetime,
          limit: int, ignore: Appointment | None = None, cached: bool = False) -> list[datetime]:
    """The free starts; `cached`: the busy times may come from the copy the calendar's
    ctag vouches for (an offer), else they are read afresh (after a lost race)."""
    tenant = assistant.tenant
    zone = ZoneInfo(tenant.time_zone)
    span = slots.search_span(kind, wish, now=now, zone=zone, days=14)
    provider = provider_of(calendar)
    read = provider.busy_cached if cached else provider.busy
    busy = read(span[0] - timedelta(hours=4), span[1] + timedelta(hours=4))
    if ignore is not None:
        busy = [one for one in busy if (one[0], one[1]) != (ignore.starts_at, ignore.ends_at)]
    return slots.free_starts(kind, wish, now=now, time_zone=tenant.time_zone, state=tenant.state or "",
                             busy=busy, per_day=_per_day(calendar, kind, span, zone), limit=limit)


def find_slots(*, assistant: Any, when: str | None = None, type_name: str | None = None,
               now: datetime | None = None, limit: int = SLOTS_OFFERED) -> dict[str, Any]:
    """Up to `limit` free starts of the type that fit the caller's words `when`
    ({"ok": true, "type", "slots": [{"start", "said"}]}), or a failure to say."""
    now = now or timezone.now()
    found = _context(assistant, type_name)
    if isinstance(found, dict):
        return found
    kind, calendar = found
    zone_name = assistant.tenant.time_zone
    wish = wish_of(when, now=now, time_zone=zone_name)
    try:
        starts = _free(assistant, kind, calendar, wish, now=now, limit=limit, cached=True)
    except ProviderError:
        return _failed(codes.CALENDAR_UNAVAILABLE, UNAVAILABLE)
    if not starts:
        return {"ok": True, "type": kind.name, "slots": [],
                "message": "Zu dieser Zeit ist leider nichts mehr frei."}
    return {"ok": True, "type": kind.name, "slots": _offer(starts, zone_name)}


def _start_of(value: datetime | str, zone_name: str) -> datetime | None:
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=ZoneInfo(zone_name))).astimezone(UTC)


def _draft(kind: AppointmentType, start: datetime, *, caller_name: str, caller_e164: str, call_id: str,
           time_zone: str, uid: str) -> EventDraft:
    description = (f"Anrufer: {caller_name}, {caller_e164}\nTerminart: {kind.name}\n"
                   f"gebucht von Stimmwerk, Anruf {call_id or '–'}")
    return EventDraft(uid=uid, start=start, end=start + timedelta(minutes=kind.duration),
                      summary=f"{kind.name}: {caller_name} ({caller_e164})", description=description,
                      caller_name=caller_name, caller_e164=caller_e164, time_zone=time_zone)


def _taken(assistant: Any, kind: AppointmentType, calendar: Calendar, start: datetime, now: datetime,
           ignore: Appointment | None = None) -> dict[str, Any]:
    zone_name = assistant.tenant.time_zone
    local = start.astimezone(ZoneInfo(zone_name))
    try:
        others = _free(assistant, kind, calendar, Wish(day=local.date(), at=local.time()), now=now,
                       limit=SLOTS_OFFERED, ignore=ignore)
    except ProviderError:
        others = []
    return _failed(codes.SLOT_TAKEN, "Dieser Termin ist leider nicht mehr frei.", slots=_offer(others, zone_name))


def _booked(kind: AppointmentType, appointment: Appointment, zone_name: str, verb: str) -> dict[str, Any]:
    # `note` first: the transcript's system note of the tool call shows the result from its start.
    return {"ok": True,
            "note": f"Termin {verb}: {said_in_figures(appointment.starts_at, time_zone=zone_name)} "
                    f"({kind.name}, {appointment.caller_name})",
            "appointment": appointment.pk, "type": kind.name,
            "start": appointment.starts_at.astimezone(ZoneInfo(zone_name)).isoformat(),
            "said": said_in_words(appointment.starts_at, time_zone=zone_name)}


def _checked_write(assistant: Any, kind: AppointmentType, calendar: Calendar, start: datetime, *, now: datetime,
                   ignore: Appointment | None, write: Any) -> dict[str, Any] | Written:
    """Within the calendar's turn: the rules, a fresh read of its busy times (never the
    copy find_slots keeps), then `write()`."""
    tenant = assistant.tenant
    zone = ZoneInfo(tenant.time_zone)
    day = start.astimezone(zone).date()
    span = (datetime.combine(day, datetime.min.time(), tzinfo=zone).astimezone(UTC),
            datetime.combine(day + timedelta(days=1), datetime.min.time(), tzinfo=zone).astimezone(UTC))
    try:
        with calendar_turn(calendar):
            busy = provider_of(calendar).busy(span[0] - timedelta(hours=4), span[1] + timedelta(hours=4))
            if ignore is not None:
                busy = [one for one in busy if (one[0], one[1]) != (ignore.starts_at, ignore.ends_at)]
            per_day = _per_day(calendar, kind, span, zone)
            if ignore is not None and ignore.starts_at.astimezone(zone).date() == day:
                per_day[day] = per_day.get(day, 1) - 1
            if not slots.bookable(start, kind, now=now, zone=zone, state=tenant.state or "", busy=busy,
                                  per_day=per_day):
                return _taken(assistant, kind, calendar, start, now, ignore)
            return write()
    except Conflict:
        return _taken(assistant, kind, calendar, start, now, ignore)
    except (ProviderError, TurnBusy):
        return _failed(codes.CALENDAR_UNAVAILABLE, UNAVAILABLE)


def appointment_book(*, assistant: Any, start: datetime | str, caller_e164: str, caller_name: str,
                     type_name: str | None = None, call_id: str = "",
                     now: datetime | None = None) -> dict[str, Any]:
    """Books the type at `start` for the caller: {"ok": true, "appointment", "start",
    "said", "note"}, or slot_taken with the next free slots, or another failure."""
    now = now or timezone.now()
    found = _context(assistant, type_name)
    if isinstance(found, dict):
        return found
    kind, calendar = found
    zone_name = assistant.tenant.time_zone
    moment = _start_of(start, zone_name)
    caller_name = " ".join(str(caller_name or "").split())[:200]
    if moment is None:
        return _failed(codes.INVALID_START, "Den Zeitpunkt habe ich nicht verstanden.")
    if not caller_name or not caller_e164:
        return _failed(codes.CALLER_MISSING, "Auf welchen Namen darf ich den Termin eintragen?")
    uid = f"stimmwerk-{uuid.uuid4().hex}"

    def write() -> Appointment:
        draft = _draft(kind, moment, caller_name=caller_name, caller_e164=caller_e164, call_id=call_id,
                       time_zone=zone_name, uid=uid)
        written = provider_of(calendar).create(draft)
        return Appointment.objects.create(
            tenant=assistant.tenant, calendar=calendar, assistant_id=assistant.pk, type_name=kind.name,
            starts_at=draft.start, ends_at=draft.end, caller_e164=caller_e164, caller_name=caller_name,
            call_id=call_id, external_id=written.external_id, etag=written.etag)

    result = _checked_write(assistant, kind, calendar, moment, now=now, ignore=None, write=write)
    if isinstance(result, dict):
        return result
    assert isinstance(result, Appointment)
    return _booked(kind, result, zone_name, "gebucht")


def callers_appointments(*, assistant: Any, caller_e164: str, caller_name: str,
                         now: datetime | None = None) -> list[Appointment]:
    """The caller's coming appointments with the tenant: their number and their name
    must both match (never another caller's); the name as spelled or by its sound
    (calendars_app/names.py)."""
    now = now or timezone.now()
    if not caller_e164 or not caller_name:
        return []
    rows = Appointment.objects.for_tenant(assistant.tenant).filter(
        caller_e164=caller_e164, status=Appointment.Status.BOOKED, starts_at__gte=now).select_related("calendar")
    return [row for row in rows if name_matches(row.caller_name, caller_name)]


def _the_callers(assistant: Any, caller_e164: str, caller_name: str, appointment_id: str | None,
                 when: str | None, now: datetime) -> Appointment | dict[str, Any]:
    mine = callers_appointments(assistant=assistant, caller_e164=caller_e164, caller_name=caller_name, now=now)
    if appointment_id:
        mine = [row for row in mine if row.pk == appointment_id]
    if when and len(mine) > 1:
        wish = wish_of(when, now=now, time_zone=assistant.tenant.time_zone)
        zone = ZoneInfo(assistant.tenant.time_zone)
        if wish.day is not None:
            mine = [row for row in mine if row.starts_at.astimezone(zone).date() == wish.day] or mine
    if not mine:
        return _failed(codes.APPOINTMENT_NOT_FOUND,
                       "Unter Ihrer Nummer und diesem Namen finde ich keinen kommenden Termin.")
    if len(mine) > 1:
        zone_name = assistant.tenant.time_zone
        return _failed(codes.APPOINTMENT_AMBIGUOUS, "Sie haben mehrere Termine; welchen meinen Sie?",
                       appointments=[{"appointment": row.pk,
                                      "said": said_in_words(row.starts_at, time_zone=zone_name)} for row in mine])
    return mine[0]


def appointment_move(*, assistant: Any, caller_e164: str, caller_name: str, start: datetime | str,
                     appointment_id: str | None = None, when: str | None = None,
                     now: datetime | None = None) -> dict[str, Any]:
    """Moves the caller's appointment to `start` (a conditional write on the ETag we saw)."""
    now = now or timezone.now()
    found = _the_callers(assistant, caller_e164, caller_name, appointment_id, when, now)
    if isinstance(found, dict):
        return found
    appointment = found
    kind = type_named(assistant, appointment.type_name)
    if kind is None:
        return _failed(codes.APPOINTMENT_TYPE_UNKNOWN, "Diese Terminart wird nicht mehr vergeben.")
    zone_name = assistant.tenant.time_zone
    moment = _start_of(start, zone_name)
    if moment is None:
        return _failed(codes.INVALID_START, "Den Zeitpunkt habe ich nicht verstanden.")
    calendar = appointment.calendar

    def write() -> Appointment:
        draft = _draft(kind, moment, caller_name=appointment.caller_name, caller_e164=appointment.caller_e164,
                       call_id=appointment.call_id, time_zone=zone_name,
                       uid=appointment.external_id.rstrip("/").rsplit("/", 1)[-1].removesuffix(".ics"))
        written = provider_of(calendar).move(Written(appointment.external_id, appointment.etag), draft)
        appointment.starts_at, appointment.ends_at = draft.start, draft.end
        appointment.external_id, appointment.etag = written.external_id, written.etag
        appointment.save(update_fields=["starts_at", "ends_at", "external_id", "etag", "updated_at"])
        return appointment

    result = _checked_write(assistant, kind, calendar, moment, now=now, ignore=appointment, write=write)
    if isinstance(result, dict):
        return result
    assert isinstance(result, Appointment)
    return _booked(kind, result, zone_name, "verschoben auf")


def appointment_cancel(*, assistant: Any, caller_e164: str, caller_name: str, appointment_id: str | None = None,
                       when: str | None = None, now: datetime | None = None) -> dict[str, Any]:
    """Cancels the caller's appointment (removes the event, `If-Match` its ETag)."""
    now = now or timezone.now()
    found = _the_callers(assistant, caller_e164, caller_name, appointment_id, when, now)
    if isinstance(found, dict):
        return found
    appointment = found
    zone_name = assistant.tenant.time_zone
    try:
        with calendar_turn(appointment.calendar):
            provider_of(appointment.calendar).cancel(Written(appointment.external_id, appointment.etag))
    except Conflict:
        return _failed(codes.APPOINTMENT_CHANGED, "Der Termin wurde im Kalender geändert; bitte sprechen Sie mit "
                                              "unserem Team.")
    except (ProviderError, TurnBusy):
        return _failed(codes.CALENDAR_UNAVAILABLE, UNAVAILABLE)
    appointment.status = Appointment.Status.CANCELLED
    appointment.save(update_fields=["status", "updated_at"])
    return {"ok": True,
            "note": f"Termin abgesagt: {said_in_figures(appointment.starts_at, time_zone=zone_name)} "
                    f"({appointment.type_name}, {appointment.caller_name})",
            "appointment": appointment.pk, "said": said_in_words(appointment.starts_at, time_zone=zone_name)}




def appointments_erase(*, tenant: Tenant, e164: str | None, call_ids: list[str]) -> int:
    """privacy_app's erasure, in its transaction: our records of the number's appointments
    (and of those booked in the calls) are deleted; returns how many. The events in the
    tenant's own calendar are the practice's records and stay (docs/privacy.md)."""
    return appointments_of(tenant=tenant, e164=e164, call_ids=call_ids).delete()[1].get(Appointment._meta.label, 0)
