"""The dialling of campaigns: `campaigns_tick`, a periodic job (every minute,
console/jobs/schedule.py) that start and resume also queue at once.

A tick, in any number of job workers at the same time:

1. records the outcomes of attempts whose call ended (campaigns_app/outcomes.py);
2. steps every running campaign: under the campaign's row lock (FOR UPDATE SKIP
   LOCKED on PostgreSQL: a campaign another worker is stepping is left to it; SQLite's
   IMMEDIATE transactions serialise all writers), if the window is open now it claims
   up to `concurrency` minus the attempts in flight of its due contacts (FOR UPDATE
   SKIP LOCKED too). Claiming an attempt is one transaction with the call's minute
   reservation (`calls_app.services.call_request_outbound`, exactly as any outbound
   call): the cap reached pauses the campaign with the reason (`campaign.paused`);
3. dials every claimed attempt: an attempt goes from `claimed` to `dialing` by a
   compare-and-set, so exactly one worker sends its dial, with the attempt's id as the
   idempotency key (calls_app.dialing). A dial whose answer never came (a carrier
   timeout after it placed the call, a worker killed mid-request) stays `dialing`:
   after CAMPAIGN_DIAL_LEASE_SEC it is sent again with the same key to a carrier that
   honours keys (which answers the call it placed), and never to one that does not
   (its events, or their absence, decide).

Every function takes `now`: the clock is the caller's (tests move it freely).
"""
import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from calls_app.carriers import CarrierUnavailable, outbound_carrier
from calls_app.dialing import DialOptions, adapter_of, call_dial
from calls_app.models import Call
from calls_app.services import RESERVATION_GRACE, MinuteCapReached, call_fail_undialled, call_request_outbound
from campaigns_app import services
from campaigns_app.models import Campaign, CampaignAttempt, CampaignContact, Outcome
from campaigns_app.outcomes import attempt_end
from campaigns_app.selectors import blocked_among
from campaigns_app.window import next_slot
from console.errors import ValidationFailed

logger = logging.getLogger("campaigns_app.scheduler")


def campaigns_tick(*, now: datetime | None = None) -> dict[str, int]:
    """One round of every campaign (the periodic job); returns what it did, counted."""
    now = now or timezone.now()
    done = {"ended": outcomes_collect(now=now), "resent": dials_resend(now=now), "claimed": 0, "dialled": 0}
    for campaign_id in Campaign.objects.filter(state=Campaign.State.RUNNING).values_list("pk", flat=True):
        done["claimed"] += len(campaign_step(campaign_id=campaign_id, now=now))
    # Every claimed attempt, this tick's and any a worker left behind when it died
    # between its claim and its dial.
    for attempt_id in CampaignAttempt.objects.filter(state=CampaignAttempt.State.CLAIMED).values_list("pk", flat=True):
        done["dialled"] += attempt_dial(attempt_id=attempt_id, now=now)
    return done


# --- Outcomes ----------------------------------------------------------------------------

def outcomes_collect(*, now: datetime) -> int:
    """Records the outcome of every attempt whose call ended, and ends as `failed` the
    attempts whose call's end never came (lost events) well after its granted time."""
    in_flight = CampaignAttempt.objects.filter(state__in=(CampaignAttempt.State.DIALING, CampaignAttempt.State.DIALLED))
    ended = list(in_flight.filter(call__ended_at__isnull=False).values_list("pk", flat=True))
    ended += list(in_flight.filter(call__isnull=True).values_list("pk", flat=True))
    for attempt_id in ended:
        attempt_end(attempt_id=attempt_id, now=now)
    lost = 0
    oldest = now - RESERVATION_GRACE - timedelta(seconds=settings.CAMPAIGN_DIAL_LEASE_SEC)
    for attempt in in_flight.filter(call__ended_at__isnull=True, claimed_at__lt=oldest).select_related("call"):
        granted = timedelta(seconds=(attempt.call.max_seconds or 0) if attempt.call else 0)
        if attempt.claimed_at + granted < oldest:
            logger.warning("Attempt %s: no end of call %s came from the carrier; recorded as failed",
                           attempt.pk, attempt.call_id)
            lost += attempt_end(attempt_id=attempt.pk, now=now, lost=True) is not None
    return len(ended) + lost


# --- Claiming ----------------------------------------------------------------------------

def campaign_step(*, campaign_id: str, now: datetime) -> list[str]:
    """Claims the attempts the campaign may start now; returns their ids (dialled after
    the commit). Completes the campaign when nothing is left to call (or its endAt came)."""
    with transaction.atomic():
        # The campaign's row alone (OF self): with the joined tenant row locked too, a
        # call's end committing under the usage counter (it references the tenant) waited
        # for this transaction while this one waited for the counter — a deadlock seen
        # on PostgreSQL with two workers and the carrier's callbacks.
        campaign = (Campaign.objects.select_for_update(skip_locked=True, of=("self",)).select_related("tenant")
                    .filter(pk=campaign_id, state=Campaign.State.RUNNING).first())
        if campaign is None:
            return []  # another worker is stepping it, or it is no longer running
        tenant = campaign.tenant
        in_flight = CampaignAttempt.objects.filter(campaign=campaign, state__in=CampaignAttempt.IN_FLIGHT).count()
        contacts = CampaignContact.objects.filter(campaign=campaign)
        slot = next_slot(now, window=campaign.window, time_zone=tenant.time_zone, state=tenant.state,
                         start_at=campaign.start_at, end_at=campaign.end_at)
        if not in_flight and (slot is None or not contacts.open().exists()):
            services.campaign_complete(campaign=campaign, now=now)
            return []
        if slot != now:
            return []
        capacity = min(campaign.concurrency, tenant.campaign_concurrency_limit) - in_flight
        if capacity <= 0:
            return []
        due = list(contacts.filter(status=CampaignContact.Status.PENDING, due_at__lte=now)
                   .order_by("due_at", "id").select_for_update(skip_locked=True)[:capacity])
        return _claim(campaign, due, now)


def _claim(campaign: Campaign, due: list[CampaignContact], now: datetime) -> list[str]:
    tenant = campaign.tenant
    phones = [contact.phone for contact in due]
    blocked = blocked_among(tenant=tenant, phones=phones)
    # A number another campaign of the tenant is calling right now waits for a later tick.
    busy = set(CampaignAttempt.objects.for_tenant(tenant).filter(state__in=CampaignAttempt.IN_FLIGHT,
                                                                 contact__phone__in=phones)
               .values_list("contact__phone", flat=True))
    carrier = outbound_carrier()
    claimed = []
    for contact in due:
        if contact.phone in busy and contact.phone not in blocked:
            continue
        if contact.phone in blocked:  # blocked after its upload, while it waited for a retry
            contact.status, contact.outcome, contact.completed_at = (
                CampaignContact.Status.DONE, Outcome.SKIPPED_BLOCKLIST, now)
            contact.save(update_fields=["status", "outcome", "completed_at"])
            services.contact_announce(contact, campaign)
            continue
        try:
            # The campaign's assistant is the call's: it answers the callee (agent_app).
            call = call_request_outbound(tenant=tenant, carrier=carrier, to_e164=contact.phone,
                                         from_number=campaign.from_number, assistant_id=campaign.assistant_id,
                                         now=now)
        except MinuteCapReached as exc:
            logger.info("Campaign %s paused: the minute cap of tenant %s is reached", campaign.pk, tenant.slug)
            services.campaign_pause(campaign=campaign, reason=Campaign.PausedReason.MINUTE_CAP_REACHED,
                                    details=exc.details, locked=True, now=now)
            break
        except ValidationFailed:
            logger.warning("Campaign %s paused: its caller number is no longer the tenant's", campaign.pk)
            services.campaign_pause(campaign=campaign, reason=Campaign.PausedReason.FROM_NUMBER_UNAVAILABLE,
                                    details={"fromNumber": campaign.from_number}, locked=True, now=now)
            break
        attempt = CampaignAttempt.objects.create(tenant=tenant, campaign=campaign, contact=contact,
                                                 number=contact.attempts + 1, call=call, claimed_at=now)
        contact.status, contact.attempts, contact.last_attempt_at = (
            CampaignContact.Status.CALLING, contact.attempts + 1, now)
        contact.save(update_fields=["status", "attempts", "last_attempt_at"])
        claimed.append(attempt.pk)
    return claimed


# --- Dialling ----------------------------------------------------------------------------

def attempt_dial(*, attempt_id: str, now: datetime) -> int:
    """Sends the dial of a claimed attempt, if this worker wins it (1), else nothing (0)."""
    with transaction.atomic():
        won = CampaignAttempt.objects.filter(pk=attempt_id, state=CampaignAttempt.State.CLAIMED).update(
            state=CampaignAttempt.State.DIALING, dial_started_at=now, dials=F("dials") + 1)
    if won:
        _send(attempt_id, now)
    return won


def _erased(call: Call | None) -> bool:
    """Whether the number of the call was erased (privacy_app) after its attempt was
    claimed: it holds the number's pseudonym now, which is never dialled."""
    return call is not None and not call.to_e164.startswith("+")


def _send(attempt_id: str, now: datetime, *, repeat: bool = False) -> None:
    attempt = CampaignAttempt.objects.select_related("call").get(pk=attempt_id)
    if _erased(attempt.call):
        # Won from the erasure's compare-and-set, read after its commit: nothing was sent.
        call_fail_undialled(call=attempt.call)
        CampaignAttempt.objects.filter(pk=attempt_id, state=CampaignAttempt.State.DIALING).update(
            state=CampaignAttempt.State.ENDED, outcome=Outcome.ERASED, ended_at=now)
        return
    options = DialOptions(idempotency_key=attempt.pk, machine_detection=settings.CAMPAIGN_MACHINE_DETECTION,
                          repeat=repeat)
    try:
        call_dial(call=attempt.call, options=options)
    except CarrierUnavailable:
        pass  # refused: the call failed (its minutes released); collected as `failed`
    except Exception:
        # The answer is unknown: the carrier may have placed the call. The attempt stays
        # `dialing` (dials_resend, or the call's own events, decide).
        logger.exception("Dial of attempt %s (call %s) ended without an answer", attempt.pk, attempt.call_id)
        return
    with transaction.atomic():
        CampaignAttempt.objects.filter(pk=attempt_id, state=CampaignAttempt.State.DIALING).update(
            state=CampaignAttempt.State.DIALLED, dialled_at=now)


def dials_resend(*, now: datetime) -> int:
    """Dials whose answer never came, older than the lease: a call the carrier reported
    (it has its carrier id) is dialled; to a carrier that honours idempotency keys the
    dial is sent again with the same key (it answers the call it placed, or places the
    one it never got); others are never sent twice."""
    lease = timedelta(seconds=settings.CAMPAIGN_DIAL_LEASE_SEC)
    resent = 0
    stale = CampaignAttempt.objects.filter(state=CampaignAttempt.State.DIALING, dial_started_at__lt=now - lease)
    for attempt in stale.select_related("call"):
        call = attempt.call
        if call is None or call.carrier_call_id or call.is_ended:
            CampaignAttempt.objects.filter(pk=attempt.pk, state=CampaignAttempt.State.DIALING).update(
                state=CampaignAttempt.State.DIALLED, dialled_at=now)
            continue
        if _erased(call) or not adapter_of(call).capabilities.idempotent_dials:
            continue  # never sent again: the call's own events, or their absence, decide
        with transaction.atomic():
            won = CampaignAttempt.objects.filter(
                pk=attempt.pk, state=CampaignAttempt.State.DIALING, dial_started_at=attempt.dial_started_at,
            ).update(dial_started_at=now, dials=F("dials") + 1)
        if won:
            logger.warning("Attempt %s: no answer to its dial; sent again with the same idempotency key", attempt.pk)
            _send(attempt.pk, now, repeat=True)
            resent += 1
    return resent
