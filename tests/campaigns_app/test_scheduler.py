"""The scheduler with a clock the tests set: it calls only within the window in the
tenant's zone, never on Sundays or the public holidays of the tenant's federal state,
across the DST weekends; retries after retryAfterMin up to maxAttempts; never more
calls at once than the campaign's concurrency; and the minute cap pauses it."""
from datetime import UTC, datetime

import pytest

from calls_app.dialing import machine_detected
from calls_app.models import SimDial
from campaigns_app.models import Campaign, CampaignAttempt, CampaignContact
from campaigns_app.services import blocklist_add, campaign_transition, opt_out
from tests.campaigns_app.conftest import TUESDAY_10, contacts, end_call, minutes, open_calls, tick
from webhooks_app.models import Delivery
from webhooks_app.services import endpoint_create

pytestmark = pytest.mark.django_db


def utc(*args):
    return datetime(*args, tzinfo=UTC)


def dials(tenant=None):
    return SimDial.objects.count()


def test_a_running_campaign_calls_its_due_contacts_up_to_its_concurrency(make_campaign, bavarian):
    campaign = make_campaign(people=contacts(5), concurrency=2)

    tick(TUESDAY_10)
    tick(TUESDAY_10 + minutes(1))

    assert dials() == 2
    calls = open_calls(bavarian)
    assert [c.from_e164 for c in calls] == ["+493055501234"] * 2 and all(c.carrier_call_id for c in calls)
    end_call(calls[0], when=TUESDAY_10 + minutes(2))
    tick(TUESDAY_10 + minutes(2))
    assert dials() == 3
    reached = CampaignContact.objects.get(campaign=campaign, outcome="reached")
    assert reached.status == "done" and reached.attempts == 1


def test_nobody_is_called_outside_the_window_in_the_tenants_zone(make_campaign):
    make_campaign(people=contacts(1))

    tick(utc(2026, 11, 24, 7, 59))  # 08:59 in Munich
    tick(utc(2026, 11, 24, 19, 0))  # 20:00: the window closed
    assert dials() == 0
    tick(utc(2026, 11, 24, 18, 59))  # 19:59
    assert dials() == 1


def test_never_on_sundays_and_on_saturdays_only_10_to_16(make_campaign):
    make_campaign(people=contacts(1))

    tick(utc(2026, 11, 29, 11, 0))  # Sunday noon
    tick(utc(2026, 11, 28, 15, 0))  # Saturday 16:00
    tick(utc(2026, 11, 28, 8, 59))  # Saturday 09:59
    assert dials() == 0
    tick(utc(2026, 11, 28, 9, 0))  # Saturday 10:00
    assert dials() == 1


@pytest.mark.parametrize("state, holiday", [("BY", utc(2027, 1, 6, 10, 0)),  # Heilige Drei Könige
                                            ("BY", utc(2027, 5, 27, 8, 0))])  # Fronleichnam
def test_a_bavarian_holiday_is_kept_in_bavaria_and_not_in_berlin(make_campaign, bavarian, state, holiday):
    campaign = make_campaign(people=contacts(1))

    tick(holiday)
    assert dials() == 0
    assert api_next_call(campaign, holiday).date() > holiday.date()

    bavarian.state = "BE"
    bavarian.save()
    tick(holiday)
    assert dials() == 1


def api_next_call(campaign, now):
    from campaigns_app.window import next_slot

    tenant = campaign.tenant
    tenant.refresh_from_db()
    return next_slot(now, window=campaign.window, time_zone=tenant.time_zone, state=tenant.state)


def test_nationwide_holidays_hold_for_a_tenant_without_state(make_campaign, bavarian):
    bavarian.state = ""
    bavarian.save()
    make_campaign(people=contacts(1))

    tick(utc(2026, 12, 25, 10, 0))  # Erster Weihnachtstag, a Friday
    assert dials() == 0


def test_the_spring_dst_weekend(make_campaign):
    """Clocks go forward on Sunday 29 March 2026: Saturday's 10:00 is 09:00 UTC, Monday's
    09:00 is 07:00 UTC."""
    campaign = make_campaign(people=contacts(2), concurrency=1, now=utc(2026, 3, 1))

    tick(utc(2026, 3, 28, 8, 59))
    assert dials() == 0
    tick(utc(2026, 3, 28, 9, 0))
    assert dials() == 1
    end_call(open_calls(campaign.tenant)[0], status="busy", when=utc(2026, 3, 28, 14, 30))
    tick(utc(2026, 3, 28, 15, 0))  # 16:00 on Saturday: closed
    assert api_next_call(campaign, utc(2026, 3, 28, 15, 0)) == utc(2026, 3, 30, 7, 0)
    tick(utc(2026, 3, 30, 6, 59))
    assert dials() == 1
    tick(utc(2026, 3, 30, 7, 0))
    assert dials() == 2


def test_the_autumn_dst_weekend(make_campaign):
    """Clocks go back on Sunday 25 October 2026: Monday's 09:00 is 08:00 UTC again."""
    campaign = make_campaign(people=contacts(1), now=utc(2026, 10, 1))

    assert api_next_call(campaign, utc(2026, 10, 24, 14, 0)) == utc(2026, 10, 26, 8, 0)
    tick(utc(2026, 10, 26, 7, 59))
    assert dials() == 0
    tick(utc(2026, 10, 26, 8, 0))
    assert dials() == 1


def test_a_window_bound_in_the_spring_gap_is_the_instant_after_it():
    from campaigns_app.window import next_slot, window_parse

    slot = next_slot(utc(2026, 3, 28, 12, 0), window=window_parse({"mon": "02:30-04:00"}),
                     time_zone="Europe/Berlin")
    assert slot == utc(2026, 3, 30, 0, 30)  # Monday 02:30 CEST


@pytest.mark.parametrize("status, outcome", [("no-answer", "no_answer"), ("busy", "busy"), ("failed", "failed")])
def test_retries_are_spaced_by_retry_after_min_up_to_max_attempts(make_campaign, status, outcome):
    campaign = make_campaign(people=contacts(1), retry_after_min=90, max_attempts=3)
    now = TUESDAY_10

    for attempt in (1, 2, 3):
        tick(now)
        assert dials() == attempt
        end_call(open_calls(campaign.tenant)[0], status=status, when=now + minutes(1))
        tick(now + minutes(90))  # 90 minutes after the start, 89 after the end: not yet
        assert dials() == attempt
        now += minutes(91)

    tick(now + minutes(600))
    contact = CampaignContact.objects.get(campaign=campaign)
    assert (contact.status, contact.outcome, contact.attempts, dials()) == ("done", outcome, 3, 3)
    assert list(contact.attempt_set.values_list("number", "outcome")) == [(1, outcome), (2, outcome), (3, outcome)]
    assert Campaign.objects.get(pk=campaign.pk).state == "completed"


def test_a_retry_due_after_the_window_waits_for_the_next_day(make_campaign):
    campaign = make_campaign(people=contacts(1), retry_after_min=120)
    tick(utc(2026, 11, 24, 17, 0))  # 18:00
    end_call(open_calls(campaign.tenant)[0], status="no-answer", when=utc(2026, 11, 24, 17, 1))

    tick(utc(2026, 11, 24, 19, 1))  # 20:01: due, but closed
    assert dials() == 1
    tick(utc(2026, 11, 25, 8, 0))  # Wednesday 09:00
    assert dials() == 2


def test_a_machine_gets_the_campaigns_choice_and_counts_as_voicemail(make_campaign):
    campaign = make_campaign(people=contacts(1, variables={"firstName": "Jürgen"}), voicemail="leave_message")
    tick(TUESDAY_10)
    call = open_calls(campaign.tenant)[0]

    answer = machine_detected(call_id=call.pk, answered_by="machine_end_beep")
    end_call(call, when=TUESDAY_10 + minutes(1))
    tick(TUESDAY_10 + minutes(1))

    assert answer.hang_up is False and answer.touchpoint == "campaign.voicemail"
    assert answer.variables == {"firstName": "Jürgen"}
    contact = CampaignContact.objects.get(campaign=campaign)
    assert (contact.status, contact.outcome) == ("done", "voicemail")


def test_hangup_on_machines_and_humans_are_talked_to(make_campaign):
    campaign = make_campaign(people=contacts(2), concurrency=2)
    tick(TUESDAY_10)
    first, second = open_calls(campaign.tenant)

    assert machine_detected(call_id=first.pk, answered_by="machine_start").hang_up is True
    assert machine_detected(call_id=second.pk, answered_by="human") is None


def test_the_campaign_completes_when_everyone_is_done(make_campaign, bavarian):
    endpoint_create(tenant=bavarian, url="http://127.0.0.1:9/hook", event_types=[
        "campaign.started", "campaign.completed", "campaign.contact.completed"])
    campaign = make_campaign(people=contacts(1))
    tick(TUESDAY_10)
    end_call(open_calls(bavarian)[0], when=TUESDAY_10 + minutes(1))

    tick(TUESDAY_10 + minutes(1))

    assert Campaign.objects.get(pk=campaign.pk).state == "completed"
    assert sorted(Delivery.objects.values_list("event_type", flat=True)) == [
        "campaign.completed", "campaign.contact.completed", "campaign.started"]


def test_the_minute_cap_pauses_the_campaign_with_its_reason(make_campaign, bavarian):
    bavarian.minute_cap, bavarian.max_call_minutes = 4, 2
    bavarian.save()
    endpoint_create(tenant=bavarian, url="http://127.0.0.1:9/hook", event_types=["campaign.paused"])
    campaign = make_campaign(people=contacts(5), concurrency=3)

    tick(TUESDAY_10)

    campaign.refresh_from_db()
    assert dials() == 2  # 2 x 2 minutes reserved: the cap is reached
    assert (campaign.state, campaign.paused_reason) == ("paused", "minute_cap_reached")
    assert campaign.paused_details["cap"] == 4 and campaign.paused_details["remaining"] == 0
    assert CampaignContact.objects.filter(campaign=campaign, status="pending").count() == 3
    assert Delivery.objects.get().event_type == "campaign.paused"
    assert '"reason":"minute_cap_reached"' in Delivery.objects.get().payload
    tick(TUESDAY_10 + minutes(1))
    assert dials() == 2


def test_end_at_completes_the_campaign(make_campaign):
    campaign = make_campaign(people=contacts(1), end_at=utc(2026, 11, 24, 8, 0))

    tick(TUESDAY_10)

    assert Campaign.objects.get(pk=campaign.pk).state == "completed" and dials() == 0


def test_start_at_holds_the_first_call_back(make_campaign):
    make_campaign(people=contacts(1), start_at=utc(2026, 11, 25, 9, 0))

    tick(TUESDAY_10)
    assert dials() == 0
    tick(utc(2026, 11, 25, 9, 0))
    assert dials() == 1


def test_a_paused_campaign_dials_nobody_and_its_calls_still_end(make_campaign):
    campaign = make_campaign(people=contacts(3), concurrency=1)
    tick(TUESDAY_10)
    campaign_transition(campaign=campaign, change="pause")
    end_call(open_calls(campaign.tenant)[0], when=TUESDAY_10 + minutes(1))

    tick(TUESDAY_10 + minutes(2))

    assert dials() == 1
    assert CampaignContact.objects.get(campaign=campaign, attempts=1).outcome == "reached"


def test_a_number_blocked_while_it_waited_for_a_retry_is_not_called_again(make_campaign):
    campaign = make_campaign(people=contacts(1))
    tick(TUESDAY_10)
    call = open_calls(campaign.tenant)[0]
    end_call(call, status="busy", when=TUESDAY_10 + minutes(1))
    tick(TUESDAY_10 + minutes(1))
    blocklist_add(tenant=campaign.tenant, phone=call.to_e164)

    tick(TUESDAY_10 + minutes(200))

    contact = CampaignContact.objects.get(campaign=campaign)
    assert (contact.outcome, contact.attempts, dials()) == ("skipped_blocklist", 1, 1)


def test_opt_out_ends_the_numbers_contacts_in_every_campaign(make_campaign):
    person = contacts(1)
    first = make_campaign(people=person + contacts(1, start=50), concurrency=2)
    make_campaign(people=person)
    tick(TUESDAY_10)
    call = next(c for c in open_calls(first.tenant) if c.to_e164 == person[0]["phone"])

    opt_out(tenant=first.tenant, phone=person[0]["phone"], call_id=call.pk)
    end_call(call, when=TUESDAY_10 + minutes(1))
    tick(TUESDAY_10 + minutes(1))
    tick(TUESDAY_10 + minutes(500))

    outcomes = set(CampaignContact.objects.filter(phone=person[0]["phone"]).values_list("outcome", flat=True))
    assert outcomes == {"opted_out"}
    assert SimDial.objects.filter(to_e164=person[0]["phone"]).count() == 1  # the call it was said in
    attempt = CampaignAttempt.objects.get(call=call)
    assert attempt.outcome == "reached"
    # Both campaigns had the number: only one called it, never both at once.
    assert sorted(CampaignContact.objects.filter(phone=person[0]["phone"]).values_list("attempts", flat=True)) == [
        0, 1]


def test_a_claimed_attempt_is_dialled_once_whoever_tries(make_campaign):
    from campaigns_app.scheduler import attempt_dial, campaign_step

    campaign = make_campaign(people=contacts(1))
    [attempt_id] = campaign_step(campaign_id=campaign.pk, now=TUESDAY_10)

    assert attempt_dial(attempt_id=attempt_id, now=TUESDAY_10) == 1
    assert attempt_dial(attempt_id=attempt_id, now=TUESDAY_10) == 0
    tick(TUESDAY_10)
    assert dials() == 1 and CampaignAttempt.objects.get().dials == 1


def test_an_attempt_left_claimed_by_a_dead_worker_is_dialled_by_the_next_tick(make_campaign):
    from campaigns_app.scheduler import campaign_step

    campaign = make_campaign(people=contacts(1))
    campaign_step(campaign_id=campaign.pk, now=TUESDAY_10)  # claimed, then the worker died
    assert dials() == 0

    tick(TUESDAY_10 + minutes(1))

    assert dials() == 1 and CampaignAttempt.objects.get().state == "dialled"
