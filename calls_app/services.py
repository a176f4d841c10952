"""Writes of the voice runtime: carriers, outbound requests, the voice agent's web calls
and the owners' heartbeats. The minute ledger (cap, reservations, booking, recount) is
in calls_app/ledger.py, carrier events in calls_app/carrier_events.py, phone calls that
our own bridges carry in calls_app/phone_calls.py; their public names are importable
from here too."""
import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from calls_app.carrier_events import (  # noqa: F401 (the names calls_app.services has always offered)
    APPLIED,
    PENDING,
    EventOutcome,
    UnknownCall,
    UnknownCarrier,
    UnknownNumber,
    event_receive,
)
from calls_app.carriers import CarrierError, CarrierUnavailable, adapter_for, outbound_carrier
from calls_app.ledger import (  # noqa: F401 (as above)
    END_ATTEMPTS,
    RESERVATION_GRACE,
    USAGE_THRESHOLDS,
    MinuteCapReached,
    UsageDrift,
    _cap_checked,
    _finish,
    _locked,
    _reserve,
    reservations_release_expired,
    usage_recompute,
)
from calls_app.models import Call, Carrier, TranscriptEntry
from calls_app.signing import carrier_secret, new_nonce, seal
from console.db.conflicts import retry_conflicts
from console.errors import ValidationFailed
from console.numbers.models import PhoneNumber
from console.phone import InvalidPhoneNumber, to_e164
from leads_app.models import Lead

logger = logging.getLogger("calls_app.webhook")


# --- Carriers ---------------------------------------------------------------------------

TWILIO_API_BASE = "https://api.twilio.com"


@transaction.atomic
def carrier_create(*, carrier_id, name="", caller_id="", kind=Carrier.Kind.SIGNED_WEBHOOK, account_sid="",
                   auth_token="", api_base=""):
    """A new carrier: returns (Carrier, its secret to show once). A `twilio` carrier
    needs its account's SID and auth token (kept sealed, never shown again; its secret
    is not used by Twilio and is returned only for symmetry); `api_base` defaults to
    Twilio's REST host."""
    if Carrier.objects.filter(pk=carrier_id).exists():
        raise ValidationFailed.field("id", f"A carrier '{carrier_id}' exists already; use --rotate for a new secret.")
    if kind not in Carrier.Kind.values:
        raise ValidationFailed.field("kind", f"One of {', '.join(Carrier.Kind.values)}.")
    if caller_id:
        try:
            caller_id = to_e164(caller_id)
        except InvalidPhoneNumber as exc:
            raise ValidationFailed.field("caller_id", str(exc)) from None
    if kind == Carrier.Kind.TWILIO:
        if not (account_sid and auth_token):
            raise ValidationFailed.field("account_sid", "A twilio carrier needs --account-sid and --auth-token.")
        api_base = (api_base or TWILIO_API_BASE).rstrip("/")
    elif account_sid or auth_token or api_base:
        raise ValidationFailed.field("kind", "--account-sid, --auth-token and --api-base are for twilio carriers.")
    carrier = Carrier(id=carrier_id, name=name, caller_id=caller_id, secret_nonce=new_nonce(), kind=kind,
                      account_sid=account_sid, auth_token_sealed=seal(auth_token) if auth_token else "",
                      api_base=api_base)
    carrier.full_clean()
    carrier.save()
    return carrier, carrier_secret(carrier)


@transaction.atomic
def carrier_token_replace(*, carrier, auth_token):
    """A twilio carrier's new auth token (after the account's token was rotated)."""
    carrier.auth_token_sealed = seal(auth_token)
    carrier.secret_rotated_at = timezone.now()
    carrier.save(update_fields=["auth_token_sealed", "secret_rotated_at"])


@transaction.atomic
def carrier_rotate_secret(*, carrier):
    """A new secret for `carrier`; the old one stops working at once."""
    carrier.secret_nonce = new_nonce()
    carrier.secret_rotated_at = timezone.now()
    carrier.save(update_fields=["secret_nonce", "secret_rotated_at"])
    return carrier_secret(carrier)


# --- Outbound calls ---------------------------------------------------------------------

@transaction.atomic
def call_request_outbound(*, tenant, carrier, to_e164, from_number=None, lead_id="", now=None):
    """Checks the cap and reserves minutes for a new outbound call (status `queued`).

    One transaction holding the tenant's counter row: used + reserved minutes are
    read and the reservation written atomically, so concurrent requests can never
    be granted more than the cap together."""
    counter, minutes = _cap_checked(tenant, now or timezone.now())
    period = counter.period
    caller_id = _caller_id(tenant, carrier, from_number)
    _check_lead(tenant, lead_id)
    call = Call.objects.create(
        tenant=tenant, carrier=carrier, direction=Call.Direction.OUTBOUND, from_e164=caller_id, to_e164=to_e164,
        status=Call.Status.QUEUED, lead_id=lead_id or "", reserved_minutes=minutes, reserved_period=period,
        max_seconds=60 * minutes, recording_enabled=tenant.recording_enabled,
        transcription_enabled=tenant.transcription_enabled,
    )
    _reserve(counter, minutes)
    return call


def _caller_id(tenant, carrier, from_number):
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


def _check_lead(tenant, lead_id):
    if lead_id and not Lead.objects.for_tenant(tenant).filter(pk=lead_id).exists():
        # Another tenant's lead answers like one that does not exist.
        raise ValidationFailed.field("leadId", f"No lead '{lead_id}' in this tenant.")


def call_dial(*, call, **options):
    """Hands the call to its carrier with the granted time limit. Runs after the
    reservation is committed, so a slow carrier never holds the counter lock.

    A carrier that refuses (CarrierError) fails the call and releases its minutes
    (502). Any other failure leaves the outcome unknown (the carrier may have placed
    the call): the call stays queued, its events still apply if they come, and its
    reservation is released after its granted time like any call without call.ended.

    `options` go to the carrier's adapter as they are (e.g. a twilio carrier's
    `machine_detection` and `idempotency_key`; calls_app/twilio.py)."""
    try:
        carrier_call_id = adapter_for(call.carrier_id).dial(call=call, max_seconds=call.max_seconds, **options)
    except CarrierError as exc:
        logger.warning("Carrier %s refused call %s: %s", call.carrier_id, call.pk, exc)
        call_fail_undialled(call=call)
        raise CarrierUnavailable() from None
    with transaction.atomic():
        # A fast carrier may have reported call.started (with the same id) already.
        Call.objects.filter(pk=call.pk, carrier_call_id__isnull=True).update(carrier_call_id=carrier_call_id)
    call.carrier_call_id = carrier_call_id
    return call


def call_start_for_lead(*, lead):
    """The callback inbox's "Rückruf starten": an outbound call to the lead's number,
    linked to the lead, through the same cap check and dial as POST /voice/v1/calls
    (MinuteCapReached, CarrierUnavailable as there)."""
    call = call_request_outbound(tenant=lead.tenant, carrier=outbound_carrier(), to_e164=lead.phone, lead_id=lead.pk)
    return call_dial(call=call)


@transaction.atomic
def call_fail_undialled(*, call):
    call = _locked(Call.objects.select_related("tenant")).get(pk=call.pk)
    if not call.is_ended:
        _finish(call, status=Call.Status.FAILED, seconds=0, ended_at=timezone.now(), recording_url="")


# --- Web calls (the voice agent's WebSocket sessions) ------------------------------------

WEB_CARRIER = "web"


def _web_carrier():
    """The built-in carrier of calls that arrive over the voice agent's WebSocket. It
    posts no webhooks: the agent writes its calls through the services below."""
    carrier, _ = Carrier.objects.get_or_create(pk=WEB_CARRIER, defaults={"name": "Web (voice agent)",
                                                                         "secret_nonce": new_nonce()})
    return carrier


@transaction.atomic
def call_request_web(*, tenant, max_minutes=None, now=None):
    """Checks the cap and reserves minutes for a voice agent session, exactly as for an
    outbound call: a new inbound call of carrier `web` (status `queued`) holding the
    reservation; its `max_seconds` is the grant the session cannot outlive. `max_minutes`
    caps the grant further (the public demo page's grants)."""
    counter, minutes = _cap_checked(tenant, now or timezone.now())
    if max_minutes is not None:
        minutes = max(1, min(minutes, max_minutes))
    call = Call.objects.create(
        tenant=tenant, carrier=_web_carrier(), direction=Call.Direction.INBOUND, from_e164="", to_e164="",
        status=Call.Status.QUEUED, reserved_minutes=minutes, reserved_period=counter.period,
        max_seconds=60 * minutes, recording_enabled=False, transcription_enabled=tenant.transcription_enabled,
    )
    _reserve(counter, minutes)
    return call


@transaction.atomic
def call_web_start(*, call_id, now=None):
    """The session's WebSocket is open: the call is active from now on, and its owner's
    first heartbeat is now (`call_heartbeat`)."""
    now = now or timezone.now()
    Call.objects.filter(pk=call_id, started_at__isnull=True, ended_at__isnull=True).update(
        started_at=now, status=Call.Status.ACTIVE, heartbeat_at=now)


@transaction.atomic
def call_web_line(*, call_id, role, text, ts):
    """One transcript line or system note of a web call, at its time; kept only where the
    call keeps transcripts, and never after the call ended."""
    call = Call.objects.filter(pk=call_id).only("transcription_enabled", "redacted", "ended_at").first()
    if call is not None and call.transcription_enabled and not call.redacted and not call.is_ended:
        TranscriptEntry.objects.create(call_id=call_id, role=role, text=text, ts=ts)


@transaction.atomic
def call_web_disclosed(*, call_id):
    """The disclosure was spoken to the caller in full."""
    Call.objects.filter(pk=call_id).update(disclosed=True)


@retry_conflicts(attempts=END_ATTEMPTS)
@transaction.atomic
def call_web_end(*, call_id, status=Call.Status.COMPLETED, now=None):
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


# --- Owners' heartbeats ------------------------------------------------------------------
# A call whose conversation a process of ours holds (the voice agent's WebSocket; a phone
# call's media stream served here does the same) has an owner, which says every
# CALL_HEARTBEAT_SEC that it still holds it. A killed server says nothing more: the
# sweep books its calls (docs/operations.md, "When something dies").

@transaction.atomic
def call_heartbeat(*, call_id, now=None):
    """The owner of a call under way (the process that holds its conversation) still
    holds it; called every CALL_HEARTBEAT_SEC. Returns False when the call has ended
    meanwhile (e.g. the sweep took the owner for dead): the owner should stop."""
    return Call.objects.filter(pk=call_id, ended_at__isnull=True).update(heartbeat_at=now or timezone.now()) == 1


def calls_orphaned_end(*, now=None):
    """The periodic job: ends every call under way whose owner has not written a
    heartbeat for CALL_HEARTBEAT_TIMEOUT_SEC (its server was killed, its machine lost),
    web or phone alike, through the one booking path (`_finish`): `completed`, ended
    and booked at its last heartbeat, the seconds its owner was known to hold it, its
    reservation released, `call.ended` announced. A call ended once is never booked
    again, and a call whose owner is alive is not touched. Returns how many it ended."""
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
def _orphan_end(*, call_id, cutoff):
    """Under the call's lock: ends it if it is still under way without a heartbeat since
    `cutoff` (its owner may have ended it, or come back, since the sweep's read)."""
    call = _locked(Call.objects.select_related("tenant")).filter(pk=call_id).first()
    if call is None or call.is_ended or call.heartbeat_at is None or call.heartbeat_at >= cutoff:
        return False
    ended_at = call.heartbeat_at
    if call.started_at is None:
        status, seconds = Call.Status.CANCELED, 0
    else:
        status = Call.Status.COMPLETED
        seconds = max(0, round((ended_at - call.started_at).total_seconds()))
        seconds = min(seconds, call.max_seconds or seconds)
    _finish(call, status=status, seconds=seconds, ended_at=ended_at, recording_url="")
    return True


