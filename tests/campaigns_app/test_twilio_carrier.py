"""Campaigns over a Twilio-compatible carrier: its REST API is a fake on loopback
(tests/twilio_fake.py, FakeTwilio), its webhooks are posted to the
real views, signed by Twilio's own RequestValidator.

- The reached callee talks with the campaign's assistant, whose scripts have the
  contact's variables, and can always object (`opt_out`), whatever its tools.
- Twilio places a call per request, so a dial whose answer was lost (the carrier
  placed the call, the connection broke) is never sent again: the carrier's callbacks,
  which name our call in their URL, bind the call and decide its outcome; a request
  that never reached the carrier ends `failed` after the call's grant and is retried
  as a new attempt.
- Answering machines: AsyncAmd's verdict gets the campaign's choice over REST.
- The minute cap pauses the campaign before the carrier is asked.
"""
import json
import os
import random
import signal
import subprocess
import sys
import threading
from datetime import timedelta
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.db import connection
from django.test import Client
from twilio.request_validator import RequestValidator

from agent_app.services import agent_session_claim
from agent_app.session import CallContext, _mind_for
from calls_app.models import Call, UsageCounter
from calls_app.services import carrier_create
from campaigns_app.models import Campaign, CampaignAttempt, CampaignContact
from console.assistants.models import Assistant
from scripts_app.services import script_override_put
from tests.agent_app.phone import ACCOUNT, TOKEN, signed_post, stream_of, voice_params
from tests.campaigns_app.conftest import NUMBER, TUESDAY_10, contacts, minutes, tick
from tests.live_service import PROJECT, LiveService
from tests.twilio_fake import FakeTwilio
from webhooks_app.models import Delivery
from webhooks_app.services import endpoint_create

LEASE = timedelta(seconds=120)
BASE = "http://testserver"
TARGET = {"name": "Praxisteam", "e164": "+4930901829"}


class Clock:
    """The test's time, also the time at which the carrier's callbacks arrive (calls_app
    stamps a call's end with it: a retry is due retryAfterMin after it)."""

    def __init__(self, now):
        self.at = now

    def now(self):
        return self.at


@pytest.fixture
def clock(monkeypatch):
    clock = Clock(TUESDAY_10)
    monkeypatch.setattr("calls_app.phone_calls.timezone", clock)
    return clock


def step(clock, now):
    """The scheduler's tick at `now`, which the carrier's next callbacks arrive at too."""
    clock.at = now
    return tick(now)


@pytest.fixture
def twilio(settings, db, fake_twilio, monkeypatch, clock):
    """The campaigns dial through carrier tw1, whose REST API is the fake. The tick that
    start queues is left out: the tests' clock ticks, not the wall clock."""
    settings.VOICE_OUTBOUND_CARRIER = "tw1"
    settings.VOICE_PUBLIC_BASE_URL = BASE
    settings.CAMPAIGN_DIAL_LEASE_SEC = int(LEASE.total_seconds())
    settings.CAMPAIGN_MACHINE_DETECTION = True
    monkeypatch.setattr("campaigns_app.services.lifecycle.job_enqueue_on_commit", lambda *args, **kwargs: None)
    carrier, _ = carrier_create(carrier_id="tw1", kind="twilio",
                                credentials={"account_sid": ACCOUNT, "auth_token": TOKEN, "api_base": fake_twilio.url})
    return carrier


def callback(client, dial, status=None, *, seconds=0, answered_by=None, url="StatusCallback"):
    """The carrier's callback to the URL the dial gave it (`StatusCallback`, or
    `AsyncAmdStatusCallback` for the machine verdict), signed as Twilio signs it."""
    target = dial["form"][url]
    parts = urlsplit(target)
    params = {"CallSid": dial["sid"], "AccountSid": ACCOUNT, "From": dial["form"]["From"], "To": dial["form"]["To"],
              "Direction": "outbound-api", "ApiVersion": "2010-04-01"}
    if status is not None:
        params["CallStatus"] = status
        if status in ("completed", "busy", "no-answer", "failed", "canceled"):
            params["CallDuration"] = str(seconds)
    if answered_by is not None:
        params.update(AnsweredBy=answered_by, MachineDetectionDuration="3120")
    response = signed_post(client, f"{parts.path}?{parts.query}", params, url=target)
    assert response.status_code == 204, response.content
    return response


def attempt_of(dial):
    """The attempt a dial was sent for, found by the call its callbacks name."""
    call_id = parse_qs(urlsplit(dial["form"]["StatusCallback"]).query)["call"][0]
    return CampaignAttempt.objects.select_related("call", "contact").get(call_id=call_id)


# --- The campaign's assistant answers -------------------------------------------------------

@pytest.mark.django_db
def test_the_callee_talks_with_the_campaigns_assistant_and_its_contacts_variables(
        twilio, clock, fake_twilio, make_campaign, bavarian, client):
    Assistant.objects.create(tenant=bavarian, name="Allgemein", tools=["create_callback"])  # the tenant's first
    reminder = Assistant.objects.create(tenant=bavarian, name="Erinnerung", tools=["transfer_call"],
                                        transfer_targets=[TARGET])
    script_override_put(tenant=bavarian, touchpoint_id="inbound.greeting",
                        text="Guten Tag, {{Vorname}}, hier ist {{companyName}} wegen Ihres Termins.")
    person = contacts(1, variables={"Vorname": "Jürgen"})
    campaign = make_campaign(people=person, assistant=reminder.pk)

    step(clock, TUESDAY_10)

    [dial] = fake_twilio.dials
    attempt = attempt_of(dial)
    call = attempt.call
    assert call.assistant_id == reminder.pk  # its tools and its analysis apply from the request on
    assert dial["key"] == attempt.pk and dial["form"]["To"] == person[0]["phone"] and dial["form"]["From"] == NUMBER
    assert dial["form"]["StatusCallback"] == f"{BASE}/voice/twilio/tw1/status?call={call.pk}"
    assert dial["form"]["StatusCallbackEvent"] == ["initiated", "completed"]

    # The callee answers: the carrier fetches the dial's Url, and the stream's token opens
    # a session of the campaign's assistant with the contact's variables.
    answer = signed_post(client, urlsplit(dial["form"]["Url"]).path + "?" + urlsplit(dial["form"]["Url"]).query,
                         voice_params(dial["sid"], to=person[0]["phone"], caller=NUMBER, direction="outbound-api"),
                         url=dial["form"]["Url"])
    _, token = stream_of(answer.content.decode())
    session = agent_session_claim(token=token, transport="twilio", carrier_id="tw1",
                                  carrier_call_id=dial["sid"])
    assert (session.assistant_id, session.variables) == (reminder.pk, {"Vorname": "Jürgen"})
    context = CallContext.of_agent_session(session)
    assert (context.channel, context.caller_e164) == ("Telefon", person[0]["phone"])
    from agent_app.conversation import opening

    assert "Guten Tag, Jürgen, hier ist Acme wegen Ihres Termins." in opening(tenant=bavarian,
                                                                              variables=context.variables).text
    mind = _mind_for(context)
    assert mind.assistant.pk == reminder.pk
    assert f"Weiterleitungsziele: Praxisteam ({TARGET['e164']})" in mind.messages[0]["content"]
    # A campaign call always takes an objection and can end, whatever the assistant's tools.
    assert {tool["function"]["name"] for tool in mind.tools} == {"transfer_call", "opt_out", "end_call"}
    assert CampaignContact.objects.get(campaign=campaign).status == "calling"


@pytest.mark.django_db
def test_on_a_campaign_call_the_callees_objection_blocks_the_number_and_ends_the_call(
        twilio, clock, fake_twilio, make_campaign, bavarian, settings):
    """The offline dialogue policy hears the wish, the assistant (without the tool in its
    own list) confirms politely, `opt_out` puts the number on the blocklist, the call
    ends; the contact is `opted_out` and no campaign of the tenant calls it again."""
    from agent_app.mind import Mind
    from registry_app import snapshot

    snapshot.invalidate()
    settings.GATEWAY_MODE, settings.GATEWAY_MAX_EUR, settings.GATEWAY_LANE_SETTINGS = "mock", 0.0, {}
    assistant = Assistant.objects.create(tenant=bavarian, name="Erinnerung", tools=["create_callback"])
    person = contacts(1)
    campaign = make_campaign(people=person, assistant=assistant.pk, max_attempts=3)
    other = make_campaign(people=person, name="Zweite Runde")
    step(clock, TUESDAY_10)
    [dial] = fake_twilio.dials
    call = attempt_of(dial).call

    mind = Mind(tenant=bavarian, call_id=call.pk, language="de", assistant=assistant,
                caller_e164=person[0]["phone"], channel="Telefon")
    reply = mind.turn("Bitte rufen Sie mich nicht mehr an.")

    assert reply.text.startswith("Selbstverständlich. Ich vermerke, dass Sie keine Anrufe mehr von uns wünschen.")
    assert reply.text.endswith("Auf Wiederhören!") and reply.action == "end_call"
    assert any("opt_out" in note for note in reply.notes)
    entry = bavarian.blocked_numbers.get()
    assert (entry.phone, entry.reason, entry.call_id) == (person[0]["phone"], "opt_out", call.pk)
    assert set(CampaignContact.objects.filter(phone=person[0]["phone"]).values_list("campaign_id", "outcome")) == {
        (campaign.pk, "opted_out"), (other.pk, "opted_out")}
    assert Call.objects.get(pk=call.pk).assistant_actions[0]["tool"] == "opt_out"
    snapshot.invalidate()


# --- A lost answer is never sent again --------------------------------------------------------

@pytest.mark.django_db
def test_a_dial_whose_answer_was_lost_is_not_sent_again_and_the_carriers_callbacks_decide(
        twilio, clock, fake_twilio, make_campaign, client):
    campaign = make_campaign(people=contacts(1), max_attempts=2, retry_after_min=30)
    fake_twilio.lose_answers(1)  # the carrier places the call; its answer never comes

    step(clock, TUESDAY_10)
    [dial] = fake_twilio.dials
    attempt = CampaignAttempt.objects.select_related("call").get()
    assert (attempt.state, attempt.dials, attempt.call.carrier_call_id) == ("dialing", 1, None)

    step(clock, TUESDAY_10 + LEASE + timedelta(seconds=1))
    assert len(fake_twilio.dials) == 1  # Twilio would place a second call: never sent again

    callback(client, dial, "initiated")  # the carrier's first callback names our call
    assert Call.objects.get(pk=attempt.call_id).carrier_call_id == dial["sid"]
    step(clock, TUESDAY_10 + LEASE * 2)
    assert CampaignAttempt.objects.get().state == "dialled"

    fake_twilio.end(dial["sid"])
    callback(client, dial, "no-answer")
    callback(client, dial, "no-answer")  # the carrier's retry changes nothing
    step(clock, TUESDAY_10 + minutes(5))
    attempt.refresh_from_db()
    assert (attempt.state, attempt.outcome, attempt.dials) == ("ended", "no_answer", 1)
    contact = CampaignContact.objects.get(campaign=campaign)
    assert (contact.status, contact.attempts) == ("pending", 1)

    step(clock, TUESDAY_10 + minutes(40))  # retryAfterMin later: a new attempt, a new key
    assert len(fake_twilio.dials) == 2
    assert fake_twilio.dials[1]["key"] != dial["key"]
    assert sorted(CampaignAttempt.objects.values_list("pk", flat=True)) == sorted(d["key"] for d in fake_twilio.dials)


@pytest.mark.django_db
def test_a_dial_the_carrier_never_got_ends_failed_after_the_grant_and_is_retried_once(
        twilio, clock, fake_twilio, make_campaign):
    campaign = make_campaign(people=contacts(1), max_attempts=2, retry_after_min=30)
    fake_twilio.refuse_unplaced(1)  # the connection broke before the carrier placed anything

    step(clock, TUESDAY_10)
    assert fake_twilio.dials == [] and CampaignAttempt.objects.get().state == "dialing"
    step(clock, TUESDAY_10 + minutes(10))
    assert CampaignAttempt.objects.get().state == "dialing"  # the carrier's callbacks may still come

    # No callback came within the call's grant (2 min), the grace and the lease: failed.
    step(clock, TUESDAY_10 + minutes(2 + 15 + 3))
    first = CampaignAttempt.objects.get()
    assert (first.state, first.outcome, first.dials) == ("ended", "failed", 1)
    # (Its call's reservation is released by calls_app's sweep, like any call without an end.)
    step(clock, TUESDAY_10 + minutes(2 + 15 + 3 + 30))
    [dial] = fake_twilio.dials
    assert dial["key"] != first.pk and CampaignContact.objects.get(campaign=campaign).attempts == 2


# --- Answering machines -------------------------------------------------------------------------

@pytest.mark.django_db
@pytest.mark.parametrize("choice", ["leave_message", "hangup"])
def test_a_machine_gets_the_campaigns_choice_over_rest_and_counts_as_voicemail(
        twilio, clock, fake_twilio, make_campaign, bavarian, client, choice):
    campaign = make_campaign(people=contacts(1, variables={"firstName": "Jürgen"}), voicemail=choice)
    step(clock, TUESDAY_10)
    [dial] = fake_twilio.dials
    form = dial["form"]
    assert (form["MachineDetection"], form["AsyncAmd"]) == ("DetectMessageEnd", "true")
    assert form["AsyncAmdStatusCallback"] == form["StatusCallback"]

    callback(client, dial, "initiated")
    callback(client, dial, answered_by="machine_end_beep", url="AsyncAmdStatusCallback")

    [update] = fake_twilio.updates
    twiml = update["form"]["Twiml"]
    assert update["sid"] == dial["sid"] and "<Hangup" in twiml
    if choice == "leave_message":
        assert twiml.index(bavarian.disclosure_text.strip()[:20]) < twiml.index("Guten Tag, Jürgen.")
        assert "Acme hat versucht, Sie telefonisch zu erreichen" in twiml and NUMBER in twiml
    else:
        assert "<Say" not in twiml
    fake_twilio.end(dial["sid"])
    callback(client, dial, "completed", seconds=24)
    step(clock, TUESDAY_10 + minutes(1))

    attempt = CampaignAttempt.objects.get()
    assert (attempt.outcome, attempt.answered_by) == ("voicemail", "machine_end_beep")
    contact = CampaignContact.objects.get(campaign=campaign)
    assert (contact.status, contact.outcome) == ("done", "voicemail")
    assert Call.objects.get(pk=attempt.call_id).seconds == 24


@pytest.mark.django_db
def test_a_person_is_talked_to_and_counts_as_reached(twilio, clock, fake_twilio, make_campaign, client):
    campaign = make_campaign(people=contacts(1), voicemail="leave_message")
    step(clock, TUESDAY_10)
    [dial] = fake_twilio.dials
    callback(client, dial, answered_by="human", url="AsyncAmdStatusCallback")
    assert fake_twilio.updates == []  # nothing asked of the carrier: the conversation goes on
    fake_twilio.end(dial["sid"])
    callback(client, dial, "completed", seconds=61)
    step(clock, TUESDAY_10 + minutes(2))
    assert CampaignContact.objects.get(campaign=campaign).outcome == "reached"


# --- The minute cap ---------------------------------------------------------------------------

@pytest.mark.django_db
def test_the_cap_pauses_the_campaign_before_the_carrier_is_asked(
        twilio, clock, fake_twilio, make_campaign, bavarian):
    bavarian.minute_cap, bavarian.max_call_minutes = 4, 2
    bavarian.save()
    endpoint_create(tenant=bavarian, url="http://127.0.0.1:9/hook", event_types=["campaign.paused"])
    campaign = make_campaign(people=contacts(5), concurrency=3)

    step(clock, TUESDAY_10)
    step(clock, TUESDAY_10 + minutes(1))

    campaign.refresh_from_db()
    assert len(fake_twilio.dials) == 2  # 2 × 2 minutes reserved: the third is never dialled
    assert (campaign.state, campaign.paused_reason) == ("paused", "minute_cap_reached")
    assert Delivery.objects.get().event_type == "campaign.paused"


# --- Two job workers, on the test run's database (PostgreSQL in CI's second run) ----------------

def _worker(stop, errors, now, fake, clock):
    """One job worker that also plays the carrier: ticks, and sends the carrier's
    callbacks for the calls it placed — `initiated` (which binds a call whose answer was
    lost), then an end for about half of the live ones each round."""
    from django.db import close_old_connections

    rng = random.Random(os.getpid() ^ threading.get_ident())
    client = Client()
    try:
        while not stop.is_set():
            step(clock, now[0])
            with fake.lock:
                live = [dial for dial in fake.dials if dial["sid"] in fake.active]
            for dial in live:
                if not dial.setdefault("initiated", False):
                    dial["initiated"] = True
                    callback(client, dial, "initiated")
                if rng.random() < 0.5:
                    with fake.lock:
                        ending = dial["sid"] in fake.active
                        fake.active.discard(dial["sid"])
                    if ending:  # the other worker did not end it first
                        status = rng.choice(["completed", "no-answer", "busy"])
                        callback(client, dial, status, seconds=30 if status == "completed" else 0)
            now[0] += minutes(1)
    except Exception as exc:  # noqa: BLE001 - reported by the test
        errors.append(exc)
        stop.set()
    finally:
        close_old_connections()
        connection.close()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_two_workers_dial_each_attempt_once_over_twilio_within_the_concurrency(
        twilio, clock, fake_twilio, make_campaign, bavarian):
    campaign = make_campaign(people=contacts(30), concurrency=3, max_attempts=2, retry_after_min=5)
    fake_twilio.lose_answers(6)  # some dials' answers are lost after the carrier placed the call
    stop, errors, now = threading.Event(), [], [TUESDAY_10]
    workers = [threading.Thread(target=_worker, args=(stop, errors, now, fake_twilio, clock)) for _ in range(2)]
    for worker in workers:
        worker.start()
    done = threading.Event()
    for _ in range(900):
        if not CampaignContact.objects.filter(campaign=campaign).open().exists():
            break
        done.wait(0.1)  # a bound on the test's time, not a synchronisation: the workers run free
    stop.set()
    for worker in workers:
        worker.join(60)

    assert not errors, errors
    attempts = CampaignAttempt.objects.filter(campaign=campaign)
    keys = [dial["key"] for dial in fake_twilio.dials]
    # One request per attempt, with the attempt's id: no attempt was ever sent twice,
    # not even those whose answer was lost.
    assert sorted(keys) == sorted(attempts.values_list("pk", flat=True)) and len(set(keys)) == len(keys)
    assert set(attempts.values_list("dials", flat=True)) == {1}
    for attempt in attempts.select_related("call"):
        assert attempt.call.carrier_call_id == next(d["sid"] for d in fake_twilio.dials if d["key"] == attempt.pk)
    assert fake_twilio.peak <= 3
    per_contact = CampaignContact.objects.filter(campaign=campaign)
    assert max(per_contact.values_list("attempts", flat=True)) <= 2
    assert not per_contact.open().exists()
    assert Campaign.objects.get(pk=campaign.pk).state == "completed"


# --- A worker killed mid-dial -------------------------------------------------------------------

KILLED_SETUP = """
import json
from datetime import datetime, UTC
from calls_app.services import carrier_create
from campaigns_app import services
from campaigns_app.contact_rows import from_json
from console.numbers.services import number_create
from console.tenants.services import tenant_create

now = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
carrier_create(carrier_id="tw1", kind="twilio", credentials={"account_sid": "ACCOUNT", "auth_token": "TOKEN", "api_base": "API_BASE"})
tenant = tenant_create(slug="acme", name="Acme", minute_cap=1000, max_call_minutes=2)
number_create(tenant=tenant, e164="+493055501234")
campaign = services.campaign_create(tenant=tenant, name="Erinnerung", purpose="service")
rows, _ = from_json([{"phone": "0176 11122233"}], time_zone=tenant.time_zone, now=now)
services.contacts_add(campaign=campaign, rows=rows, now=now)
services.campaign_transition(campaign=campaign, change="start", now=now)
print(json.dumps({"campaign": campaign.pk}))
"""
KILLED_TICK = """
from datetime import datetime, timedelta, UTC
from campaigns_app.scheduler import campaigns_tick
print(campaigns_tick(now=datetime(2026, 11, 24, 9, 0, tzinfo=UTC) + timedelta(seconds=OFFSET)))
"""
KILLED_STATE = """
import json
from campaigns_app.models import CampaignAttempt, CampaignContact
print(json.dumps({"attempts": [{"id": a.pk, "state": a.state, "dials": a.dials, "sid": a.call.carrier_call_id,
                                "outcome": a.outcome} for a in CampaignAttempt.objects.select_related("call")],
                  "contacts": list(CampaignContact.objects.values_list("status", "outcome", "attempts"))}))
"""


@pytest.mark.slow
def test_a_worker_killed_mid_dial_over_twilio_leaves_one_call_that_the_callbacks_resolve(tmp_path):
    from tests.live_service import request as http

    service = LiveService(tmp_path)
    try:
        service.migrate()  # no job worker runs: start's queued tick waits, the test's ticks run
        base, _ = service.start()
        with FakeTwilio() as fake:
            setup = KILLED_SETUP.replace("ACCOUNT", ACCOUNT).replace("TOKEN", TOKEN).replace("API_BASE", fake.url)
            service.manage("shell", "-c", setup)
            env = {**service.env, "VOICE_OUTBOUND_CARRIER": "tw1", "VOICE_PUBLIC_BASE_URL": base,
                   "CAMPAIGN_DIAL_LEASE_SEC": str(int(LEASE.total_seconds()))}

            def worker_tick(offset):
                return subprocess.Popen([sys.executable, "manage.py", "shell", "-c",
                                         KILLED_TICK.replace("OFFSET", str(offset))],
                                        cwd=PROJECT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        start_new_session=True)

            fake.hold()
            worker = worker_tick(0)
            assert fake.received.wait(120), worker.communicate(timeout=5)
            os.killpg(worker.pid, signal.SIGKILL)  # killed while the carrier holds its answer
            worker.wait(10)
            fake.release()

            for offset in (int(LEASE.total_seconds()) + 1, 3 * int(LEASE.total_seconds())):
                next_worker = worker_tick(offset)
                out, err = next_worker.communicate(timeout=120)
                assert next_worker.returncode == 0, err[-1500:]
            assert len(fake.dials) == 1  # never sent again: Twilio would place a second call

            # The carrier's callbacks reach the service (signed over the URL the dial gave).
            [dial] = fake.dials
            for status, seconds in (("initiated", None), ("completed", 42)):
                params = {"CallSid": dial["sid"], "AccountSid": ACCOUNT, "CallStatus": status,
                          "From": dial["form"]["From"], "To": dial["form"]["To"], "Direction": "outbound-api"}
                if seconds is not None:
                    params["CallDuration"] = str(seconds)
                url = dial["form"]["StatusCallback"]
                answer = http("POST", url, urlencode(params).encode(), headers={
                    "Content-Type": "application/x-www-form-urlencoded",
                    "X-Twilio-Signature": RequestValidator(TOKEN).compute_signature(url, params)})
                assert answer is not None and answer.status == 204, answer and answer.body
            last = worker_tick(4 * int(LEASE.total_seconds()))
            _, err = last.communicate(timeout=120)
            assert last.returncode == 0, err[-1500:]
            state = json.loads(service.manage("shell", "-c", KILLED_STATE).strip().splitlines()[-1])
        [attempt] = state["attempts"]
        assert dial["key"] == attempt["id"] and attempt["sid"] == dial["sid"]
        assert (attempt["state"], attempt["dials"], attempt["outcome"]) == ("ended", 1, "reached")
        assert state["contacts"] == [["done", "reached", 1]]
    finally:
        service.stop()


@pytest.mark.django_db
def test_a_carrier_without_an_outbound_adapter_fails_the_attempt_at_once(settings, clock, make_campaign, bavarian):
    """An Asterisk carrier registers the calls its PBX receives and dials nothing: a
    campaign pointed at it fails each attempt without holding its minutes."""
    carrier_create(carrier_id="ast1", kind="asterisk")
    settings.VOICE_OUTBOUND_CARRIER = "ast1"
    campaign = make_campaign(people=contacts(1), max_attempts=1)

    step(clock, TUESDAY_10)
    step(clock, TUESDAY_10 + minutes(1))

    attempt = CampaignAttempt.objects.select_related("call").get()
    assert (attempt.state, attempt.outcome, attempt.call.status) == ("ended", "failed", "failed")
    assert UsageCounter.objects.get(tenant=bavarian).reserved_minutes == 0
    assert CampaignContact.objects.get(campaign=campaign).outcome == "failed"
