"""Warm hand-overs (issue 37 §5, docs/telephony.md "Warm transfer"): transfer_call's
mode "warm". While the caller waits with the agent, the person is rung through the
call's carrier (`CarrierAdapter.ring`); when they answer, the carrier asks the kind's
`warm` hook what to say — a short German summary of the call (who, what, what was
already done) — and the caller is joined after it (`join`, through the conversation's
hand-over). Nobody answering within VOICE_WARM_TRANSFER_RING_SEC, the ring is
cancelled and the tool tells the model so: the agent says it and offers a callback.

The ringing is waited for in the conversation's worker thread (the model's tool call),
never inside a transaction: the state lives in a WarmTransfer row, which the carrier's
hook (another process) changes. The summary is kept only while the person is rung."""
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from calls_app.carriers import CarrierError, adapter_for
from calls_app.errors import CarrierUnavailable
from calls_app.kinds import KINDS
from calls_app.kinds.base import CarrierKind
from calls_app.ledger import _locked, call_held_book
from calls_app.models import Call, Carrier, TranscriptEntry, WarmTransfer
from calls_app.services import _record_action, call_callback_create
from console.assistants.builtin_tools import builtin_tool
from console.errors import ValidationFailed
from console.phone import mask
from speech_app.spoken import spoken_form

logger = logging.getLogger("calls_app.phone")

ANSWERED, NOT_ANSWERED, UNSUPPORTED = "answered", "not_answered", "unsupported"
DIALPLAN = "dialplan"  # an Asterisk dialplan rings the person after the conversation (kind.warm_by_dialplan)
RESUME = "resume"  # the dialplan's report answered: connect the caller to AudioSocket again
POLL_SEC = 0.2
MAX_SUMMARY = 600
MAX_WORDS = 200  # of the caller's own words, when the model gave no reason
# What the person hears when they answer after the caller left or the ring was given up.
GONE = "Der Anrufer ist leider nicht mehr in der Leitung. Auf Wiederhören."


def warm_room(call_id: str) -> str:
    """The conference of a call's warm hand-over (the caller and the person meet there)."""
    return f"stimmwerk-{call_id}"


def warm_summary(*, call: Call, name: str, reason: str = "") -> str:
    """What the person hears before the caller is joined: who calls (the number in digit
    groups), what about (the model's reason, else the caller's last words), what the
    assistant already did (its tools' `done`, e.g. "eine Rückrufbitte aufgenommen")."""
    number = call.from_e164 if call.direction == Call.Direction.INBOUND else call.to_e164
    who = (f"ein Anruf von der Nummer {spoken_form(_grouped(number))}" if number.startswith("+")
           else "ein Anruf")
    what = " ".join(reason.split())
    if not what and call.transcription_enabled:
        said = list(TranscriptEntry.objects.filter(call=call, role=TranscriptEntry.Role.USER)
                    .order_by("-ts", "-pk").values_list("text", flat=True)[:2])
        what = " ".join(" ".join(reversed(said)).split())[:MAX_WORDS]
    done = []
    for action in call.assistant_actions or []:
        tool = builtin_tool(action.get("tool", ""))
        if tool is not None and tool.done and tool.done not in done:
            done.append(tool.done)
    parts = [f"Hallo {name}, hier ist die Telefonassistenz von {call.tenant.name}: {who}."]
    if what:
        parts.append(f"Anliegen: {what.rstrip('.')}.")
    if done:
        parts.append(f"Bereits erledigt: {', '.join(done)}.")
    parts.append("Ich verbinde jetzt.")
    text = " ".join(parts)
    return text if len(text) <= MAX_SUMMARY else text[:MAX_SUMMARY - 1].rsplit(" ", 1)[0] + "…"


def _grouped(e164: str) -> str:
    """+4917612345678 as "0176 12345678" (German numbers nationally), for spoken_form."""
    import phonenumbers

    parsed = phonenumbers.parse(e164, None)
    style = (phonenumbers.PhoneNumberFormat.NATIONAL if phonenumbers.region_code_for_number(parsed) == "DE"
             else phonenumbers.PhoneNumberFormat.INTERNATIONAL)
    return phonenumbers.format_number(parsed, style)


def call_warm_transfer(*, call_id: str, target: dict[str, Any], reason: str = "") -> str:
    """Rings the transfer target `target` ({"name", "e164"}, checked by call_transfer)
    for the call and waits for the person: ANSWERED (they hear the summary; the
    conversation joins the caller next), NOT_ANSWERED (not within
    VOICE_WARM_TRANSFER_RING_SEC, busy, or the carrier refused: the ring is cancelled),
    or UNSUPPORTED (the call's line has no warm hand-over: a web call, a carrier without
    the capability), or DIALPLAN (an Asterisk call: its dialplan rings the person once
    the conversation handed over, lets them hear the summary over AudioSocket and
    reports the outcome, `warm_dialplan_outcome`). Recorded on the call
    (`assistant_actions`: mode and outcome)."""
    call = Call.objects.select_related("tenant").get(pk=call_id)
    adapter = None
    if call.carrier_id and call.carrier_call_id:
        try:
            adapter = adapter_for(call.carrier_id)
        except CarrierUnavailable:  # a kind without an adapter (an Asterisk dialplan)
            adapter = None
    if adapter is None and call.carrier_id and _kind_of(call.carrier_id).warm_by_dialplan:
        warm_transfers_expire()
        WarmTransfer.objects.create(call=call, target=target["e164"], leg_id=str(uuid.uuid4()),
                                    summary=warm_summary(call=call, name=target["name"], reason=reason))
        return DIALPLAN
    if adapter is None or not adapter.capabilities.warm_transfer:
        _record_outcome(call_id=call.pk, name=target["name"], outcome=UNSUPPORTED)
        return UNSUPPORTED
    seconds = settings.VOICE_WARM_TRANSFER_RING_SEC
    warm_transfers_expire()
    transfer = WarmTransfer.objects.create(call=call, target=target["e164"],
                                           summary=warm_summary(call=call, name=target["name"], reason=reason))
    try:
        leg = adapter.ring(call=call, target=target["e164"], transfer_id=transfer.pk, seconds=seconds)
    except (CarrierError, OSError) as exc:
        logger.warning("Call %s: ringing %s for a warm hand-over was refused (%s)", call.pk, mask(target["e164"]),
                       exc)
        leg = ""
    else:
        WarmTransfer.objects.filter(pk=transfer.pk).update(leg_id=leg)
        # The carrier's own ring timeout ends it first; a little more for its answer to reach us.
        deadline = time.monotonic() + seconds + 2
        while time.monotonic() < deadline and _status(transfer.pk) == WarmTransfer.Status.RINGING:
            time.sleep(POLL_SEC)
    if _decide(transfer.pk, WarmTransfer.Status.NOT_ANSWERED) and leg:
        try:
            adapter.ring_cancel(leg_id=leg)
        except (CarrierError, OSError) as exc:  # it ends by the carrier's own timeout then
            logger.info("Call %s: the warm hand-over's ring %s could not be cancelled (%s)", call.pk, leg, exc)
    outcome = ANSWERED if _status(transfer.pk) == WarmTransfer.Status.ANSWERED else NOT_ANSWERED
    _record_outcome(call_id=call.pk, name=target["name"], outcome=outcome)
    return outcome


def not_answered_message(*, name: str) -> str:
    """transfer_call's answer to the model when nobody answered (on every line: the
    tool's refusal on Twilio and SIP, the resumed conversation's on an Asterisk dialplan)."""
    seconds = settings.VOICE_WARM_TRANSFER_RING_SEC
    return (f"{name} hat nicht innerhalb von {seconds} Sekunden abgenommen. Sagen Sie das dem Anrufer und bieten "
            "Sie einen Rückruf an (create_callback).")


def warm_dialplan_ringing(*, call: Call) -> bool:
    """Whether an Asterisk dialplan is about to ring a person for the call's warm
    hand-over (call_warm_transfer answered DIALPLAN and nothing decided it yet): the
    hand-over then holds the call instead of booking it (phone_calls.call_hand_over)."""
    return bool(call.carrier_id) and WarmTransfer.objects.filter(
        call=call, status=WarmTransfer.Status.RINGING).exists() and _kind_of(call.carrier_id).warm_by_dialplan


def warm_transfers_expire(*, now: datetime | None = None) -> int:
    """Rings older than AGENT_TOKEN_TTL_SEC that nobody decided (a dialplan that never
    reported) are given up and lose their summary: a summary is kept only while the
    person may still be rung. Run before each new warm hand-over; returns how many."""
    now = now or timezone.now()
    return WarmTransfer.objects.filter(
        status=WarmTransfer.Status.RINGING, created_at__lt=now - timedelta(seconds=settings.AGENT_TOKEN_TTL_SEC),
    ).update(status=WarmTransfer.Status.NOT_ANSWERED, summary="", decided_at=now)


def _kind_of(carrier_id: str) -> CarrierKind:
    kind = Carrier.objects.filter(pk=carrier_id).values_list("kind", flat=True).first()
    return KINDS.get(kind or "") or CarrierKind(name="", label="")


def _status(transfer_id: int) -> str | None:
    return WarmTransfer.objects.filter(pk=transfer_id).values_list("status", flat=True).first()


def _decide(transfer_id: int, status: str) -> bool:
    """The ring's outcome, once: True when this changed it (it was still ringing)."""
    return bool(WarmTransfer.objects.filter(pk=transfer_id, status=WarmTransfer.Status.RINGING).update(
        status=status, summary="", decided_at=timezone.now()))


@transaction.atomic
def _record_outcome(*, call_id: str, name: str, outcome: str) -> None:
    _record_action(_locked(Call.objects.all()).get(pk=call_id), "transfer_call", target=name, mode="warm",
                   outcome=outcome)


def warm_leg_answered(*, carrier: Carrier, transfer_id: str) -> tuple[str | None, str]:
    """The person rung for a warm hand-over answered (the carrier asks what to say): the
    summary, once (the ring is decided `answered`), and the hand-over's room; None for
    the summary when the ring was given up, the caller's call ended, or the transfer is
    not this carrier's."""
    if not transfer_id.isdigit() or len(transfer_id) > 18:
        return None, ""
    row = (WarmTransfer.objects.filter(pk=int(transfer_id), call__carrier=carrier)
           .values_list("summary", "call_id", "call__ended_at").first())
    if row is None or row[2] is not None:
        return None, ""
    summary, call_id, _ = row
    if not _decide(int(transfer_id), WarmTransfer.Status.ANSWERED):
        return None, ""
    return summary, warm_room(call_id)


def warm_leg_ended(*, carrier: Carrier, transfer_id: str) -> None:
    """The call to the person ended without an answer (busy, no answer, failed,
    cancelled): the ring is decided `not_answered` if it still rang."""
    if transfer_id.isdigit() and len(transfer_id) <= 18 and WarmTransfer.objects.filter(
            pk=int(transfer_id), call__carrier=carrier).exists():
        _decide(int(transfer_id), WarmTransfer.Status.NOT_ANSWERED)


# --- An Asterisk dialplan's warm hand-over ------------------------------------------------------
# The conversation hands over as for a plain one (the call keeps the number, AudioSocket
# ends), but the call is held, not booked (phone_calls.call_hand_over); the dialplan reads
# the whisper's UUID (`warm_dialplan_whisper`), dials the person with Dial's U() running
# AudioSocket(<that UUID>) on their channel — our listener speaks the summary there and
# hangs up (`warm_whisper_claim`: the call booked handed over), then Asterisk bridges the
# caller — and reports DIALSTATUS (`warm_dialplan_outcome`). Nobody answering, the report
# answers RESUME and the caller's AudioSocket() connects with the call's UUID once more
# (`warm_dialplan_resume`): the conversation goes on. docs/telephony.md has the dialplan.

def _dialplan_transfer(carrier: Carrier, call_id: str) -> WarmTransfer | None:
    return (WarmTransfer.objects.filter(call_id=call_id, call__carrier=carrier).select_related("call__tenant")
            .order_by("-created_at", "-pk").first())


def warm_dialplan_whisper(*, carrier: Carrier, call_id: str) -> str:
    """The UUID the person's AudioSocket() connects with to hear the summary of the
    call's warm hand-over still to ring; "" for a plain hand-over."""
    transfer = _dialplan_transfer(carrier, call_id)
    return transfer.leg_id if transfer is not None and transfer.status == WarmTransfer.Status.RINGING else ""


def warm_whisper_claim(*, token: str) -> str | None:
    """The summary an AudioSocket connection with `token` (a whisper's UUID, within
    AGENT_TOKEN_TTL_SEC of the hand-over) is to speak to the person, once (the ring is
    decided `answered`); None when it is no such UUID."""
    if not 1 <= len(token) <= 64:
        return None
    since = timezone.now() - timedelta(seconds=settings.AGENT_TOKEN_TTL_SEC)
    row = (WarmTransfer.objects.filter(leg_id=token, status=WarmTransfer.Status.RINGING, created_at__gte=since)
           .values_list("pk", "summary", "call_id").first())
    if row is None or not _decide(row[0], WarmTransfer.Status.ANSWERED):
        return None
    _book_held(row[2])  # the person answered: the caller is theirs, the call booked as handed over
    return row[1]


@transaction.atomic
def _book_held(call_id: str) -> None:
    call_held_book(_locked(Call.objects.select_related("tenant")).get(pk=call_id))


def warm_dialplan_outcome(*, carrier: Carrier, call_id: str, dial_status: str) -> str:
    """The dialplan's DIALSTATUS of the call's warm hand-over: ANSWER recorded as
    answered (the call, held since the hand-over, booked so); anything else as not
    answered, with a note on the transcript, and then RESUME while the call is still
    held: the dialplan connects the caller to AudioSocket again and the conversation
    goes on (warm_dialplan_resume), whose assistant tells the caller and offers the
    callback. A call no longer held (booked meanwhile by the orphan sweep) cannot come
    back: the callback the agent would have offered is noted here as a lead, and
    NOT_ANSWERED tells the dialplan to play its recording. So the lead is made once, on
    one side. Returns the answer ("" when the call had no warm hand-over or it was
    reported before)."""
    transfer = _dialplan_transfer(carrier, call_id)
    if transfer is None:
        return ""
    name = _target_name(transfer)
    if dial_status.strip().upper() == "ANSWER":
        _decide(transfer.pk, WarmTransfer.Status.ANSWERED)  # the whisper may have been skipped
        _book_held(call_id)
        if _outcome_recorded(transfer):
            return ""
        _record_outcome(call_id=call_id, name=name, outcome=ANSWERED)
        return ANSWERED
    _decide(transfer.pk, WarmTransfer.Status.NOT_ANSWERED)
    if WarmTransfer.objects.filter(pk=transfer.pk, status=WarmTransfer.Status.ANSWERED).exists() \
            or _outcome_recorded(transfer):
        return ""
    _record_outcome(call_id=call_id, name=name, outcome=NOT_ANSWERED)
    call = Call.objects.get(pk=call_id)
    held = not call.is_ended and bool(call.transferred_to)
    if not held:
        try:
            call_callback_create(call_id=call_id, reason=f"Warme Weiterleitung an {name}: niemand nahm ab")
        except ValidationFailed:  # no number to call back (withheld)
            logger.info("Call %s: no callback after the unanswered warm hand-over (no caller number)", call_id)
    if call.transcription_enabled and not call.redacted:
        TranscriptEntry.objects.create(call=call, role=TranscriptEntry.Role.SYSTEM, ts=timezone.now(), text=(
            f"Bei {name} nahm bei der Übergabe niemand ab" + (": zurück zum Gespräch." if held
                                                               else ": Rückruf notiert.")))
    return RESUME if held else NOT_ANSWERED


@dataclass(frozen=True)
class Resumed:
    """A call given back to its conversation after its dialplan's unanswered warm hand-over."""

    name: str  # the transfer target nobody answered at
    message: str  # transfer_call's answer to the model, as on Twilio and SIP (not_answered_message)
    history: list[tuple[str, str]]  # the call's transcript so far: ("user" | "assistant", text), in order
    elapsed: int  # seconds since the call started: its grant and the assistant's cap count on


@transaction.atomic
def warm_dialplan_resume(*, call_id: str, now: datetime | None = None) -> Resumed | None:
    """The caller of a call held for its dialplan's warm hand-over comes back over
    AudioSocket (the report answered RESUME): once — the call is no longer held (its
    `transferred_to` and kept seconds cleared; booked at its real end like any call).
    None for a call that is not held (ended, answered, resumed already) or whose last
    hand-over was not reported unanswered."""
    now = now or timezone.now()
    call = _locked(Call.objects.select_related("assistant")).filter(pk=call_id).first()
    if call is None or call.is_ended or not call.transferred_to or call.started_at is None:
        return None
    transfer = WarmTransfer.objects.filter(call=call).order_by("-created_at", "-pk").first()
    if transfer is None or transfer.status != WarmTransfer.Status.NOT_ANSWERED:
        return None
    transfer.call = call
    name = _target_name(transfer)
    call.transferred_to, call.seconds, call.heartbeat_at = "", 0, now
    call.save(update_fields=["transferred_to", "seconds", "heartbeat_at"])
    spoken = (TranscriptEntry.Role.USER, TranscriptEntry.Role.ASSISTANT)
    history = [(role, text) for role, text in TranscriptEntry.objects.filter(call=call, role__in=spoken)
               .order_by("ts", "pk").values_list("role", "text")]
    return Resumed(name=name, message=not_answered_message(name=name), history=history,
                   elapsed=max(0, round((now - call.started_at).total_seconds())))


def _target_name(transfer: WarmTransfer) -> str:
    assistant = transfer.call.assistant
    targets = assistant.transfer_targets if assistant is not None else []
    return next((t["name"] for t in targets if t.get("e164") == transfer.target), mask(transfer.target))


def _outcome_recorded(transfer: WarmTransfer) -> bool:
    actions = Call.objects.filter(pk=transfer.call_id).values_list("assistant_actions", flat=True).first() or []
    return any(a.get("tool") == "transfer_call" and a.get("outcome") in (ANSWERED, NOT_ANSWERED) for a in actions)
