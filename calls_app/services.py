"""Writes of the voice runtime: carriers, outbound requests, the voice agent's web calls
and the owners' heartbeats. The minute ledger (cap, reservations, booking, recount) is
in calls_app/ledger.py, carrier events in calls_app/carrier_events.py, phone calls that
our own bridges carry in calls_app/phone_calls.py; their public names are importable
from here too."""
import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from calls_app.carrier_events import (  # noqa: F401 (the names calls_app.services has always offered)
    APPLIED,
    PENDING,
    EventOutcome,
    event_receive,
)
from calls_app.carriers import outbound_carrier
from calls_app.dialing import call_dial
from calls_app.errors import (  # noqa: F401 (as above)
    CarrierUnavailable,
    MinuteCapReached,
    UnknownCall,
    UnknownCarrier,
    UnknownNumber,
)
from calls_app.kinds import DEFAULT_KIND, kind_named
from calls_app.kinds.credentials import credentials_clean, credentials_of, credentials_seal
from calls_app.ledger import (  # noqa: F401 (as above)
    ANALYSIS_JOB,
    END_ATTEMPTS,
    RESERVATION_GRACE,
    USAGE_THRESHOLDS,
    UsageDrift,
    _cap_checked,
    _finish,
    _locked,
    _reserve,
    call_held_book,
    reservations_release_expired,
    usage_recompute,
)
from calls_app.models import Call, Carrier, TranscriptEntry, TurnLatency
from calls_app.signing import carrier_secret, new_nonce
from console.assistants.models import Assistant
from console.assistants.selectors import assistant_live_number, assistant_of_call
from console.assistants.services import TransferRefused, assistant_transfer_target_named
from console.db.conflicts import retry_conflicts
from console.errors import ValidationFailed
from console.numbers.models import PhoneNumber
from console.phone import InvalidPhoneNumber, to_e164
from console.tenants.models import Tenant
from leads_app.models import Lead
from leads_app.preferred_time import from_words
from leads_app.services import lead_callback_revise, lead_create

logger = logging.getLogger("calls_app.webhook")


# --- Carriers ---------------------------------------------------------------------------

@transaction.atomic
def carrier_create(*, carrier_id: str, name: str = "", caller_id: str = "", kind: str = DEFAULT_KIND,
                   credentials: dict[str, str] | None = None) -> tuple[Carrier, str]:
    """A new carrier of `kind` (calls_app/kinds): returns (Carrier, its secret to show
    once). `credentials` are the fields of its kind's credentials form as typed (e.g. a
    `twilio` carrier's account SID and auth token), checked by the kind and kept sealed
    as one JSON object; a secret among them is never shown again. A kind that
    authenticates otherwise does not use the returned secret."""
    if Carrier.objects.filter(pk=carrier_id).exists():
        raise ValidationFailed.field("id", f"A carrier '{carrier_id}' exists already; use --rotate for a new secret.")
    declared = kind_named(kind)
    if caller_id:
        try:
            caller_id = to_e164(caller_id)
        except InvalidPhoneNumber as exc:
            raise ValidationFailed.field("caller_id", str(exc)) from None
    values = credentials_clean(declared.credentials, credentials or {}, kind=kind, check=declared.check)
    carrier = Carrier(id=carrier_id, name=name, caller_id=caller_id, secret_nonce=new_nonce(), kind=kind,
                      credentials_sealed=credentials_seal(values))
    carrier.full_clean()
    carrier.save()
    return carrier, carrier_secret(carrier)


@transaction.atomic
def carrier_credentials_replace(*, carrier: Carrier, credentials: dict[str, str]) -> None:
    """New values of the carrier's credentials (e.g. after the account's auth token was
    rotated): the fields given replace theirs, the others keep theirs."""
    declared = kind_named(carrier.kind)
    values = credentials_clean(declared.credentials, credentials, kind=carrier.kind,
                               current=credentials_of(carrier), check=declared.check)
    carrier.credentials_sealed = credentials_seal(values)
    carrier.secret_rotated_at = timezone.now()
    carrier.save(update_fields=["credentials_sealed", "secret_rotated_at"])


@transaction.atomic
def carrier_rotate_secret(*, carrier: Carrier) -> str:
    """A new secret for `carrier`; the old one stops working at once."""
    carrier.secret_nonce = new_nonce()
    carrier.secret_rotated_at = timezone.now()
    carrier.save(update_fields=["secret_nonce", "secret_rotated_at"])
    return carrier_secret(carrier)


# --- Outbound calls ---------------------------------------------------------------------

@transaction.atomic
def call_request_outbound(*, tenant: Tenant, carrier: Carrier, to_e164: str, from_number: str | None = None,
                          lead_id: str = "", assistant_id: str | None = None, now: datetime | None = None) -> Call:
    """Checks the cap and reserves minutes for a new outbound call (status `queued`).

    One transaction holding the tenant's counter row: used + reserved minutes are
    read and the reservation written atomically, so concurrent requests can never
    be granted more than the cap together. The call's assistant (who talks to the
    callee where our own bridge carries the call: its tools, transfer targets and
    analysis) is `assistant_id`, else the calling number's, else the tenant's first."""
    counter, minutes = _cap_checked(tenant, now or timezone.now())
    period = counter.period
    caller_id = _caller_id(tenant, carrier, from_number)
    _check_lead(tenant, lead_id)
    assistant_id = _calling_assistant(tenant, caller_id, assistant_id)
    call = Call.objects.create(
        tenant=tenant, carrier=carrier, direction=Call.Direction.OUTBOUND, from_e164=caller_id, to_e164=to_e164,
        assistant_id=assistant_id, assistant_version=_calling_version(tenant, caller_id, assistant_id),
        status=Call.Status.QUEUED, lead_id=lead_id or "", reserved_minutes=minutes, reserved_period=period,
        max_seconds=60 * minutes, recording_enabled=tenant.recording_enabled,
        transcription_enabled=tenant.transcription_enabled,
    )
    _reserve(counter, minutes)
    return call


def _calling_version(tenant: Tenant, caller_id: str, assistant_id: str | None) -> int | None:
    """The version of the outbound call's assistant it talks with: the calling number's
    pin where that number has this assistant, else its latest published (None: draft)."""
    if not assistant_id:
        return None
    pinned = (PhoneNumber.objects.for_tenant(tenant).filter(e164=caller_id, assistant_id=assistant_id)
              .values_list("assistant_version", flat=True).first())
    return assistant_live_number(assistant_id=assistant_id, pinned=pinned)


def _caller_id(tenant: Tenant, carrier: Carrier, from_number: str | None) -> str:
    """`from` must be one of the tenant's numbers; by default the first of them, else
    the carrier's own caller id (so a tenant without numbers can still call out)."""
    numbers = PhoneNumber.objects.for_tenant(tenant)
    if from_number is None:
        first = numbers.order_by("e164").values_list("e164", flat=True).first()
        return first or carrier.caller_id
    try:
        e164 = to_e164(from_number)
    except InvalidPhoneNumber as exc:
        raise ValidationFailed.field("from", str(exc)) from None
    if not numbers.filter(e164=e164).exists():
        raise ValidationFailed.field("from", "Calls can only be placed from one of the tenant's own numbers.")
    return e164


def _calling_assistant(tenant: Tenant, caller_id: str, assistant_id: str | None) -> str | None:
    """The id of the outbound call's assistant (one query): the one named, else the
    calling number's, else the tenant's first (by name, as agent_app.mind picks it)."""
    assistants = Assistant.objects.for_tenant(tenant)
    if assistant_id:
        if not assistants.filter(pk=assistant_id).exists():  # another tenant's answers like none
            raise ValidationFailed.field("assistant", f"No assistant '{assistant_id}' in this tenant.")
        return assistant_id
    on_number = PhoneNumber.objects.for_tenant(tenant).filter(e164=caller_id, assistant=OuterRef("pk"))
    return (assistants.annotate(on_number=Exists(on_number)).order_by("-on_number", "name", "id")
            .values_list("pk", flat=True).first())


def _check_lead(tenant: Tenant, lead_id: str) -> None:
    if lead_id and not Lead.objects.for_tenant(tenant).filter(pk=lead_id).exists():
        # Another tenant's lead answers like one that does not exist.
        raise ValidationFailed.field("leadId", f"No lead '{lead_id}' in this tenant.")


def call_start_for_lead(*, lead: Lead) -> Call:
    """The callback inbox's "Rückruf starten": an outbound call to the lead's number,
    linked to the lead, through the same cap check and dial as POST /voice/v1/calls
    (MinuteCapReached, CarrierUnavailable as there)."""
    call = call_request_outbound(tenant=lead.tenant, carrier=outbound_carrier(), to_e164=lead.phone, lead_id=lead.pk)
    return call_dial(call=call)


@transaction.atomic
def call_fail_undialled(*, call: Call) -> None:
    call = _locked(Call.objects.select_related("tenant")).get(pk=call.pk)
    if not call.is_ended:
        _finish(call, status=Call.Status.FAILED, seconds=0, ended_at=timezone.now(), recording_url="")


# --- Web calls (the voice agent's WebSocket sessions) ------------------------------------

WEB_CARRIER = "web"


def _web_carrier() -> Carrier:
    """The built-in carrier of calls that arrive over the voice agent's WebSocket. It
    posts no webhooks: the agent writes its calls through the services below."""
    carrier, _ = Carrier.objects.get_or_create(pk=WEB_CARRIER, defaults={"name": "Web (Sprachagent)",
                                                                         "secret_nonce": new_nonce()})
    return carrier


@transaction.atomic
def call_request_web(*, tenant: Tenant, max_minutes: int | None = None, now: datetime | None = None,
                     assistant: Assistant | None = None, test: bool = False) -> Call:
    """Checks the cap and reserves minutes for a voice agent session, exactly as for an
    outbound call: a new inbound call of carrier `web` (status `queued`) holding the
    reservation; its `max_seconds` is the grant the session cannot outlive. `max_minutes`
    caps the grant further (the public demo page's grants). `assistant` (the tenant's,
    or None, as its effective config) answers it: its version is recorded, its tools
    and analysis apply.

    A `test` call (the admin's "Im Browser testen") is marked as one, reserves nothing
    and is booked against no cap: it lasts at most AGENT_TEST_CALL_MAX_MINUTES."""
    if test:
        return Call.objects.create(
            tenant=tenant, carrier=_web_carrier(), direction=Call.Direction.INBOUND, from_e164="", to_e164="",
            assistant=assistant, assistant_version=assistant.version if assistant is not None else None,
            status=Call.Status.QUEUED, is_test=True,
            max_seconds=60 * settings.AGENT_TEST_CALL_MAX_MINUTES, recording_enabled=False,
            transcription_enabled=tenant.transcription_enabled)
    counter, minutes = _cap_checked(tenant, now or timezone.now())
    if max_minutes is not None:
        minutes = max(1, min(minutes, max_minutes))
    call = Call.objects.create(
        tenant=tenant, carrier=_web_carrier(), direction=Call.Direction.INBOUND, from_e164="", to_e164="",
        assistant=assistant, assistant_version=assistant.version if assistant is not None else None,
        status=Call.Status.QUEUED, reserved_minutes=minutes, reserved_period=counter.period,
        max_seconds=60 * minutes, recording_enabled=False, transcription_enabled=tenant.transcription_enabled,
    )
    _reserve(counter, minutes)
    return call


@transaction.atomic
def call_web_start(*, call_id: str, now: datetime | None = None) -> None:
    """The session's WebSocket is open: the call is active from now on, and its owner's
    first heartbeat is now (`call_heartbeat`)."""
    now = now or timezone.now()
    Call.objects.filter(pk=call_id, started_at__isnull=True, ended_at__isnull=True).update(
        started_at=now, status=Call.Status.ACTIVE, heartbeat_at=now)


@transaction.atomic
def call_seconds_cap(*, call_id: str, max_seconds: int) -> None:
    """The call may last at most `max_seconds` (its assistant's `maxDurationSec`, below
    the grant): every end books it with at most that many seconds."""
    Call.objects.filter(pk=call_id).filter(Q(max_seconds__isnull=True) | Q(max_seconds__gt=max_seconds)).update(
        max_seconds=max_seconds)


@transaction.atomic
def call_web_line(*, call_id: str, role: str, text: str, ts: datetime) -> None:
    """One transcript line or system note of a web call, at its time; kept only where the
    call keeps transcripts, and never after the call ended."""
    call = Call.objects.filter(pk=call_id).only("transcription_enabled", "redacted", "ended_at").first()
    if call is not None and call.transcription_enabled and not call.redacted and not call.is_ended:
        TranscriptEntry.objects.create(call_id=call_id, role=role, text=text, ts=ts)


def call_turn_latency_record(*, call_id: str, total_ms: int, end_of_turn_ms: int, recognition_ms: int, thinking_ms: int,
                             synthesis_ms: int) -> None:
    """One reply's latency, measured by the voice agent, stored with its call (an insert:
    it locks nothing the call's end waits for)."""
    TurnLatency.objects.create(call_id=call_id, total_ms=total_ms, end_of_turn_ms=end_of_turn_ms,
                               recognition_ms=recognition_ms, thinking_ms=thinking_ms, synthesis_ms=synthesis_ms)


@transaction.atomic
def call_web_disclosed(*, call_id: str, recording_announced: bool = False) -> None:
    """The disclosure was spoken to the caller in full (with the recording notice where
    `recording_announced`: the call keeps the proof that its caller was told)."""
    Call.objects.filter(pk=call_id).update(disclosed=True, recording_announced=recording_announced)


@retry_conflicts(attempts=END_ATTEMPTS)
@transaction.atomic
def call_web_end(*, call_id: str, status: str = Call.Status.COMPLETED, now: datetime | None = None) -> Call:
    """Ends a web call, releases its reservation and books its seconds — once, whatever
    ends it (the client, a timeout, a dropped connection, the end of the grant): a
    second end finds the call ended and changes nothing. A call that never started
    (its token was never used) ends `canceled` with 0 seconds. Returns the call.

    Run again when the database aborts it for a deadlock (END_ATTEMPTS in all)."""
    now = now or timezone.now()
    call = _locked(Call.objects.select_related("tenant")).get(pk=call_id)
    if call.is_ended:
        return call
    if call.started_at is None:
        status, seconds = Call.Status.CANCELED, 0
    else:
        seconds = max(0, round((now - call.started_at).total_seconds()))
        seconds = min(seconds, call.max_seconds or seconds)
    _finish(call, status=status, seconds=seconds, ended_at=now, recording_url="")
    return call



# --- What the assistant does through its built-in tools -----------------------------------
# The conversation core runs the model's tool calls (tools_app.services.tool_run) as the
# tools' owners declared them (calls_app.builtin_tools, console.assistants.builtin_tools);
# the calls' side of them is here, the only writer of calls: a callback lead linked to
# the call, the one check of a transfer, and the record of what the assistant did
# (`Call.assistant_actions`: names and times, which the analysis reads).

MAX_ACTIONS = 50


def _record_action(call: Call, tool: str, **details: Any) -> None:
    actions = list(call.assistant_actions or [])
    actions.append({"tool": tool, "at": timezone.now().isoformat().replace("+00:00", "Z"), **details})
    call.assistant_actions = actions[-MAX_ACTIONS:]
    call.save(update_fields=["assistant_actions"])


def _caller_number(call: Call) -> str:
    """The caller's number of a call in E.164, or "" (web calls, withheld or erased numbers)."""
    number = call.from_e164 if call.direction == Call.Direction.INBOUND else call.to_e164
    return number if number.startswith("+") else ""


@transaction.atomic
def call_callback_create(*, call_id: str, phone: str | None = None, preferred_time: str | None = None,
                         reason: str = "", now: datetime | None = None) -> Lead:
    """The built-in tool create_callback: a lead of kind `callback` for the call's
    caller, linked to the call (`Call.lead_id`, when the call names no lead yet), with
    its `lead.created` webhook as every lead. `phone` in any format (default: the
    caller's number; a web call has none, so the caller must be asked); `preferred_time`
    a token (`tomorrow-am`), an ISO time or the caller's words ("morgen Vormittag",
    "Dienstag um 10 Uhr"), resolved on the tenant's clock where they name a moment and
    kept as words in the lead's notes where they do not. A second callback in the same
    call corrects the first (`lead.updated`) instead of adding another. Returns the lead;
    ValidationFailed naming `phone` or `preferred_time`."""
    now = now or timezone.now()
    call = _locked(Call.objects.select_related("tenant")).get(pk=call_id)
    tenant = call.tenant
    if phone not in (None, ""):
        try:
            e164 = to_e164(str(phone))
        except InvalidPhoneNumber as exc:
            raise ValidationFailed.field("phone", str(exc)) from None
    else:
        e164 = _caller_number(call)
        if not e164:
            raise ValidationFailed.field("phone", "No caller number is known for this call: ask the caller for "
                                                  "the number to call back.")
    words = " ".join(str(preferred_time or "").split())[:200]
    parsed = from_words(words, now=now, time_zone=tenant.time_zone) if words else None
    notes = [f"Rückrufwunsch aus dem Anruf {call.pk}."]
    if words and (parsed is None or parsed.token != words):
        notes.append(f"Wunschzeit laut Anrufer: {words}")
    if reason:
        notes.append(f"Anliegen: {' '.join(str(reason).split())[:500]}")
    earlier = None
    if call.lead_id:
        earlier = Lead.objects.for_tenant(tenant).filter(
            pk=call.lead_id, kind=Lead.Kind.CALLBACK, created_at__gte=call.created_at).select_related("tenant").first()
    if earlier is not None:
        lead = lead_callback_revise(lead=earlier, phone=e164, preferred_time=parsed, notes="\n".join(notes))
    else:
        lead = lead_create(tenant=tenant, kind=Lead.Kind.CALLBACK, phone=e164, preferred_time=parsed,
                           notes="\n".join(notes))
        if not call.lead_id:
            call.lead_id = lead.pk
            call.save(update_fields=["lead_id"])
    _record_action(call, "create_callback")
    return lead


@transaction.atomic
def call_transfer(*, call_id: str, target: str, mode: str = "") -> dict[str, Any]:
    """The built-in tool transfer_call: the transfer target of the call's assistant
    that `target` names (its name, or its number in any format) as `{"name", "e164"}`,
    recorded on the call; TransferRefused (400 `transfer_refused`) for anything else —
    a number the caller, a knowledge passage or a tool's answer put into the model's
    request is never reached. The transport (ending the browser call with a system
    note, a carrier's transfer) is the conversation's. `mode` "warm" (or no mode and a
    target kept `warm`) gives the target with `"warm": True`, recorded with its outcome
    by calls_app.warm_transfers instead."""
    call = _locked(Call.objects.select_related("tenant", "assistant")).get(pk=call_id)
    if call.assistant is None:
        raise TransferRefused("This call has no assistant, so it has no transfer targets.")
    ran_with = assistant_of_call(assistant=call.assistant, version=call.assistant_version)
    chosen = assistant_transfer_target_named(assistant=ran_with, name=target)
    kept_warm = bool(chosen.pop("warm", False))
    if mode == "warm" or (mode != "cold" and kept_warm):
        return {**chosen, "warm": True}
    _record_action(call, "transfer_call", target=chosen["name"])
    return chosen


@transaction.atomic
def call_action_record(*, call_id: str, tool: str) -> None:
    """Records a built-in tool without data of its own on the call: `end_call` (the
    assistant ends the call after its goodbye) or `opt_out` (the caller objects to
    further contact). The conversation ends the call itself (`call_web_end`)."""
    if tool not in ("end_call", "opt_out"):
        raise ValueError(f"{tool} is recorded by its own service")
    _record_action(_locked(Call.objects.all()).get(pk=call_id), tool)


def call_tool_notes_erase(*, tenant: Tenant, e164: str) -> int:
    """For an erasure by caller (privacy_app): deletes the system notes of the tenant's
    calls that name the number (the conversation writes tool calls as system notes,
    numbers in E.164); returns how many."""
    notes = TranscriptEntry.objects.filter(call__tenant=tenant, role=TranscriptEntry.Role.SYSTEM,
                                           text__contains=e164)
    return notes.delete()[1].get(TranscriptEntry._meta.label, 0)


# --- Owners' heartbeats ------------------------------------------------------------------
# A call whose conversation a process of ours holds (the voice agent's WebSocket; a phone
# call's media stream served here does the same) has an owner, which says every
# CALL_HEARTBEAT_SEC that it still holds it. A killed server says nothing more: the
# sweep books its calls (docs/operations.md, "When something dies").

@transaction.atomic
def call_heartbeat(*, call_id: str, now: datetime | None = None) -> bool:
    """The owner of a call under way (the process that holds its conversation) still
    holds it; called every CALL_HEARTBEAT_SEC. Returns False when the call has ended
    meanwhile (e.g. the sweep took the owner for dead): the owner should stop."""
    return Call.objects.filter(pk=call_id, ended_at__isnull=True).update(heartbeat_at=now or timezone.now()) == 1


def calls_orphaned_end(*, now: datetime | None = None) -> int:
    """The periodic job: ends every call under way whose owner has not written a
    heartbeat for CALL_HEARTBEAT_TIMEOUT_SEC (its server was killed, its machine lost),
    web or phone alike, through the one booking path (`_finish`): `completed`, ended
    and booked at its last heartbeat, the seconds its owner was known to hold it, its
    reservation released, `call.ended` announced (a call held for an Asterisk dialplan's
    warm hand-over that never came back: at its hand-over, ledger.call_held_book). A
    call ended once is never booked again, and a call whose owner is alive is not
    touched. Returns how many it ended."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.CALL_HEARTBEAT_TIMEOUT_SEC)
    orphans = list(Call.objects.filter(ended_at__isnull=True, heartbeat_at__lt=cutoff)
                   .order_by("heartbeat_at").values_list("pk", flat=True)[:1000])
    ended = [call_id for call_id in orphans if _orphan_end(call_id=call_id, cutoff=cutoff)]
    if ended:
        logger.warning("Ended %s call(s) whose owner stopped its heartbeat, booked up to the last one: %s",
                       len(ended), ", ".join(ended))
    return len(ended)


@retry_conflicts(attempts=END_ATTEMPTS)
@transaction.atomic
def _orphan_end(*, call_id: str, cutoff: datetime) -> bool:
    """Under the call's lock: ends it if it is still under way without a heartbeat since
    `cutoff` (its owner may have ended it, or come back, since the sweep's read)."""
    call = _locked(Call.objects.select_related("tenant")).filter(pk=call_id).first()
    if call is None or call.is_ended or call.heartbeat_at is None or call.heartbeat_at >= cutoff:
        return False
    if call.transferred_to:  # held for a dialplan's warm hand-over that never came back to us
        call_held_book(call)
        return True
    ended_at = call.heartbeat_at
    if call.started_at is None:
        status, seconds = Call.Status.CANCELED, 0
    else:
        status = Call.Status.COMPLETED
        seconds = max(0, round((ended_at - call.started_at).total_seconds()))
        seconds = min(seconds, call.max_seconds or seconds)
    _finish(call, status=status, seconds=seconds, ended_at=ended_at, recording_url="")
    return True


