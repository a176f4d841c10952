"""How a campaign learns what became of its calls.

Outcomes are read from the calls themselves: the scheduler's tick looks at the
attempts whose call has ended (`Call.ended_at`, written by calls_app from the
carrier's `call.ended`) and records each once, under the attempt's row lock; calls_app
knows nothing of campaigns (docs/architecture.md). The one thing that cannot wait for
the end of the call, the carrier's answering-machine verdict, reaches us through the
hook calls_app offers (`calls_app.dialing.register_machine_listener`).
"""
from datetime import datetime, timedelta

from django.db import transaction

from calls_app.dialing import HUMAN_VERDICTS, MachineAnswer
from calls_app.models import Call
from campaigns_app.models import RETRIED_OUTCOMES, Campaign, CampaignAttempt, CampaignContact, Outcome

BY_CALL_STATUS: dict[str, Outcome] = {
    Call.Status.BUSY: Outcome.BUSY,
    Call.Status.NO_ANSWER: Outcome.NO_ANSWER,
    Call.Status.FAILED: Outcome.FAILED,
    Call.Status.CANCELED: Outcome.FAILED,
}


def is_machine(answered_by: str) -> bool:
    return bool(answered_by) and answered_by not in HUMAN_VERDICTS


def outcome_of(call: Call | None, answered_by: str = "") -> Outcome:
    """The attempt's outcome from its ended call (and the carrier's machine verdict)."""
    if call is None:
        return Outcome.FAILED
    if call.status == Call.Status.COMPLETED:
        return Outcome.VOICEMAIL if is_machine(answered_by) else Outcome.REACHED
    return BY_CALL_STATUS.get(call.status, Outcome.FAILED)


def machine_answered(*, call: Call, answered_by: str) -> MachineAnswer | None:
    """The listener of calls_app.dialing.machine_detected: notes the verdict on the
    call's attempt and answers the campaign's choice for a machine."""
    attempt = CampaignAttempt.objects.filter(call=call).select_related("campaign", "contact").first()
    if attempt is None:
        return None
    CampaignAttempt.objects.filter(pk=attempt.pk).update(answered_by=str(answered_by)[:32])
    if not is_machine(answered_by):
        return None
    campaign = attempt.campaign
    if campaign.voicemail == Campaign.Voicemail.LEAVE_MESSAGE and campaign.voicemail_touchpoint:
        return MachineAnswer(hang_up=False, touchpoint=campaign.voicemail_touchpoint,
                             variables=dict(attempt.contact.variables))
    return MachineAnswer(hang_up=True)


def attempt_end(*, attempt_id: str, now: datetime, lost: bool = False) -> Outcome | None:
    """Records the outcome of one attempt whose call ended (or, `lost`, whose call's end
    never came): once, whoever else tries at the same time. The contact is called again
    after retryAfterMin for no_answer, busy and failed while it has attempts left, else
    it is done with that outcome (`campaign.contact.completed`). A contact that opted
    out meanwhile stays opted out."""
    from campaigns_app.services import contact_announce

    with transaction.atomic():
        attempt = (CampaignAttempt.objects.select_for_update(of=("self",)).select_related("call")
                   .filter(pk=attempt_id, state__in=(CampaignAttempt.State.DIALING, CampaignAttempt.State.DIALLED))
                   .first())
        if attempt is None:
            return None
        call = attempt.call
        outcome = Outcome.FAILED if lost else outcome_of(call, attempt.answered_by)
        ended_at = (call.ended_at if call is not None and call.ended_at else None) or now
        attempt.state, attempt.outcome, attempt.ended_at = CampaignAttempt.State.ENDED, outcome, ended_at
        attempt.save(update_fields=["state", "outcome", "ended_at"])
        contact = CampaignContact.objects.select_for_update().get(pk=attempt.contact_id)
        if contact.status != CampaignContact.Status.CALLING:
            return outcome
        campaign = Campaign.objects.select_related("tenant").get(pk=attempt.campaign_id)
        if outcome in RETRIED_OUTCOMES and contact.attempts < campaign.max_attempts and not campaign.is_finished:
            contact.status, contact.outcome = CampaignContact.Status.PENDING, outcome
            contact.due_at = ended_at + timedelta(minutes=campaign.retry_after_min)
            contact.save(update_fields=["status", "outcome", "due_at"])
        else:
            contact.status, contact.outcome, contact.completed_at = CampaignContact.Status.DONE, outcome, now
            contact.save(update_fields=["status", "outcome", "completed_at"])
            contact_announce(contact, campaign)
        return outcome
