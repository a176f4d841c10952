"""The campaign and its state: create, change, delete, the transitions (start, pause,
resume, cancel, complete) and their webhooks."""
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from campaigns_app.errors import CampaignFinished, CampaignStateConflict
from campaigns_app.models import Campaign, CampaignContact
from campaigns_app.window import DEFAULT_WINDOW
from console.assistants.models import Assistant
from console.errors import ValidationFailed
from console.jobs.services import job_enqueue_on_commit
from console.numbers.models import PhoneNumber
from console.phone import InvalidPhoneNumber, to_e164
from console.quotas import quota_take
from console.tenants.models import Tenant
from scripts_app.catalog import catalog
from webhooks_app.services import event_publish

TICK_JOB = "campaigns_app.scheduler.campaigns_tick"
DEFAULT_VOICEMAIL_TOUCHPOINT = "campaign.voicemail"
# Which state each change leaves from.
TRANSITIONS = {
    "start": ((Campaign.State.DRAFT,), Campaign.State.RUNNING),
    "pause": ((Campaign.State.RUNNING,), Campaign.State.PAUSED),
    "resume": ((Campaign.State.PAUSED,), Campaign.State.RUNNING),
    "cancel": ((Campaign.State.DRAFT, Campaign.State.RUNNING, Campaign.State.PAUSED), Campaign.State.CANCELED),
}


def _from_number(tenant: Tenant, value: str | None) -> str:
    numbers = PhoneNumber.objects.for_tenant(tenant)
    if value is None:
        first = numbers.order_by("e164").values_list("e164", flat=True).first()
        if first is None:
            raise ValidationFailed.field("fromNumber", "The tenant has no phone number to call from; add one "
                                                       "(POST /v2/numbers): campaigns never call with a hidden number.")
        return first
    try:
        e164 = to_e164(value)
    except InvalidPhoneNumber as exc:
        raise ValidationFailed.field("fromNumber", str(exc)) from None
    if not numbers.filter(e164=e164).exists():
        raise ValidationFailed.field("fromNumber", "Must be one of the tenant's own numbers (GET /v2/numbers).")
    return e164


def _assistant(tenant: Tenant, assistant_id: str | None) -> Assistant | None:
    if not assistant_id:
        return None
    assistant = Assistant.objects.for_tenant(tenant).filter(pk=assistant_id).first()
    if assistant is None:
        raise ValidationFailed.field("assistant", f"No assistant '{assistant_id}' in this tenant.")
    return assistant


def _checked(tenant: Tenant, fields: dict[str, Any]) -> dict[str, Any]:
    """The fields of a create or change, checked against the tenant (numbers, assistants,
    its concurrency limit) and the touchpoint catalog."""
    errors: dict[str, list[str]] = {}
    limit = tenant.campaign_concurrency_limit
    if fields.get("concurrency") is not None and fields["concurrency"] > limit:
        errors["concurrency"] = [f"At most {limit} simultaneous calls for this tenant (its campaign limit)."]
    touchpoint = fields.get("voicemail_touchpoint")
    if touchpoint and touchpoint not in catalog():
        errors["voicemailTouchpoint"] = [f"'{touchpoint}' is not a touchpoint of the catalog (GET /v2/audio/scripts)."]
    if errors:
        raise ValidationFailed(details=errors)
    return fields


def _voicemail_defaults(campaign: Campaign) -> None:
    if campaign.voicemail == Campaign.Voicemail.LEAVE_MESSAGE and not campaign.voicemail_touchpoint:
        campaign.voicemail_touchpoint = DEFAULT_VOICEMAIL_TOUCHPOINT
    if campaign.start_at and campaign.end_at and campaign.start_at >= campaign.end_at:
        raise ValidationFailed.field("endAt", "Must be later than startAt.")


@transaction.atomic
def campaign_create(*, tenant: Tenant, name: str, purpose: str, assistant: str | None = None,
                    from_number: str | None = None, window: dict[str, Any] | None = None, concurrency: int = 1,
                    max_attempts: int = 3, retry_after_min: int = 120, voicemail: str = Campaign.Voicemail.HANGUP,
                    voicemail_touchpoint: str = "", start_at: datetime | None = None,
                    end_at: datetime | None = None) -> Campaign:
    _checked(tenant, {"concurrency": concurrency, "voicemail_touchpoint": voicemail_touchpoint})
    quota_take(tenant=tenant, name="campaigns")
    campaign = Campaign(
        tenant=tenant, name=name, purpose=purpose, assistant=_assistant(tenant, assistant),
        from_number=_from_number(tenant, from_number), window=window or DEFAULT_WINDOW, concurrency=concurrency,
        max_attempts=max_attempts, retry_after_min=retry_after_min, voicemail=voicemail,
        voicemail_touchpoint=voicemail_touchpoint or "", start_at=start_at, end_at=end_at,
    )
    _voicemail_defaults(campaign)
    campaign.save()
    return campaign


def campaign_locked(campaign: Campaign) -> Campaign:
    """The campaign's row locked until commit — its row alone (FOR UPDATE OF): a lock on
    the joined tenant row would make every commit that references the tenant (a call's
    end, booked under the usage counter) wait, a deadlock with a claim holding the
    counter (calls_app.ledger._locked)."""
    return Campaign.objects.select_for_update(of=("self",)).select_related("tenant").get(pk=campaign.pk)


@transaction.atomic
def campaign_update(*, campaign: Campaign, **fields: Any) -> Campaign:
    """Changes a campaign that is not finished; its purpose only while it is a draft
    (its contacts were checked for consent by it)."""
    campaign = campaign_locked(campaign)
    if campaign.is_finished:
        raise CampaignFinished(details={"state": campaign.state})
    if "purpose" in fields and fields["purpose"] != campaign.purpose and campaign.state != Campaign.State.DRAFT:
        raise CampaignStateConflict("The purpose can change only while the campaign is a draft: its contacts "
                                    "were checked for consent by it.", details={"state": campaign.state})
    _checked(campaign.tenant, fields)
    if "assistant" in fields:
        fields["assistant"] = _assistant(campaign.tenant, fields["assistant"])
    if "from_number" in fields:
        fields["from_number"] = _from_number(campaign.tenant, fields["from_number"])
    for name, value in fields.items():
        setattr(campaign, name, value)
    _voicemail_defaults(campaign)
    campaign.save(update_fields=[*fields, "voicemail_touchpoint", "updated_at"])
    return campaign


@transaction.atomic
def campaign_delete(*, campaign: Campaign) -> None:
    """Only a draft goes: a campaign that called keeps its contacts' consent and outcomes."""
    campaign = campaign_locked(campaign)
    if campaign.state != Campaign.State.DRAFT:
        raise CampaignStateConflict("Only a draft can be deleted; cancel the campaign instead (its consent "
                                    "records are kept).", details={"state": campaign.state})
    campaign.delete()


@transaction.atomic
def campaign_transition(*, campaign: Campaign, change: str, actor: str = "", now: datetime | None = None) -> Campaign:
    """`start`, `pause`, `resume` or `cancel`; a change the state does not allow → 409."""
    allowed_from, target = TRANSITIONS[change]
    campaign = campaign_locked(campaign)
    if campaign.state not in allowed_from:
        raise CampaignStateConflict(
            f"A {campaign.state} campaign cannot {change}; that needs state {' or '.join(allowed_from)}.",
            details={"state": campaign.state, "allowedFrom": list(allowed_from)})
    now = now or timezone.now()
    fields = ["state", "paused_reason", "paused_details", "updated_at"]
    campaign.state = target
    campaign.paused_reason, campaign.paused_details = "", {}
    if change == "start":
        campaign.started_at = now
        fields.append("started_at")
        announce(campaign, "campaign.started", key=f"campaign.started:{campaign.pk}")
    elif change == "pause":
        campaign_pause(campaign=campaign, reason=Campaign.PausedReason.OPERATOR, locked=True, now=now)
        return campaign
    elif change == "cancel":
        campaign.finished_at = now
        fields.append("finished_at")
    campaign.save(update_fields=fields)
    if target == Campaign.State.RUNNING:
        job_enqueue_on_commit(TICK_JOB)
    return campaign


def campaign_pause(*, campaign: Campaign, reason: str, details: dict[str, Any] | None = None, locked: bool = False,
                   now: datetime | None = None) -> Campaign:
    """Pauses a running campaign (in the caller's transaction) with its reason and the
    `campaign.paused` webhook."""
    if not locked:
        campaign = campaign_locked(campaign)
        if campaign.state != Campaign.State.RUNNING:
            return campaign
    campaign.state = Campaign.State.PAUSED
    campaign.paused_reason, campaign.paused_details = reason, details or {}
    campaign.pauses += 1
    campaign.save(update_fields=["state", "paused_reason", "paused_details", "pauses", "updated_at"])
    announce(campaign, "campaign.paused", key=f"campaign.paused:{campaign.pk}:{campaign.pauses}",
             extra={"reason": reason, "details": details or {}})
    return campaign


def campaign_complete(*, campaign: Campaign, now: datetime) -> Campaign:
    """Completes a running campaign (in the caller's transaction, campaign locked)."""
    campaign.state = Campaign.State.COMPLETED
    campaign.finished_at = now
    campaign.save(update_fields=["state", "finished_at", "updated_at"])
    announce(campaign, "campaign.completed", key=f"campaign.completed:{campaign.pk}")
    return campaign


def announce(campaign: Campaign, event_type: str, *, key: str, extra: dict[str, Any] | None = None) -> None:
    from campaigns_app.selectors import counts_of

    event_publish(tenant=campaign.tenant, event_type=event_type, key=key, data={
        "id": campaign.pk, "name": campaign.name, "state": campaign.state, "purpose": campaign.purpose,
        "counts": counts_of(campaign), **(extra or {}),
    })


def contact_announce(contact: CampaignContact, campaign: Campaign) -> None:
    # An erased contact's number is gone; its pseudonym is no business of the receiver.
    event_publish(tenant=campaign.tenant, event_type="campaign.contact.completed",
                  key=f"campaign.contact.completed:{contact.pk}", data={
                      "id": contact.pk, "campaign": campaign.pk, "phone": None if contact.redacted else contact.phone,
                      "outcome": contact.outcome,
                      "attempts": contact.attempts, "completedAt": contact.completed_at,
                  })
