"""Each attempt is dialled exactly once, whatever happens: a carrier that times out
after placing the call gets the same dial again only with the same idempotency key
(and places nothing new); a carrier without keys never gets a dial twice; two job
workers ticking at once never exceed the concurrency, dial no attempt twice and no
contact more than maxAttempts times; a worker killed mid-dial leaves a dial that the
next worker completes with the same key."""
import json
import os
import random
import signal
import subprocess
import sys
import threading
from datetime import timedelta

import pytest
from django.db import connection

from calls_app.models import Call, Carrier
from calls_app.signing import new_nonce
from campaigns_app.models import CampaignAttempt, CampaignContact
from tests.campaigns_app.conftest import TUESDAY_10, contacts, end_call, minutes, tick
from tests.campaigns_app.fake_carrier import FakeRestCarrier, KeyedCarrier
from tests.live_service import PROJECT, LiveService

LEASE = timedelta(seconds=120)


@pytest.fixture
def carrier_of(settings, db):
    def use(carrier_id, adapter):
        settings.VOICE_CARRIER_ADAPTERS = {**settings.VOICE_CARRIER_ADAPTERS,
                                           carrier_id: f"tests.campaigns_app.fake_carrier.{adapter}"}
        settings.VOICE_OUTBOUND_CARRIER = carrier_id
        settings.CAMPAIGN_DIAL_LEASE_SEC = int(LEASE.total_seconds())
        Carrier.objects.get_or_create(pk=carrier_id, defaults={"secret_nonce": new_nonce()})
        KeyedCarrier.reset()
    return use


@pytest.mark.django_db
def test_a_carrier_that_times_out_after_placing_the_call_gets_the_same_key_again(carrier_of, make_campaign):
    carrier_of("keyed", "KeyedCarrierAdapter")
    campaign = make_campaign(people=contacts(1))
    KeyedCarrier.time_out_once = {"*"}
    from campaigns_app.scheduler import campaign_step, campaigns_tick

    [attempt_id] = campaign_step(campaign_id=campaign.pk, now=TUESDAY_10)
    KeyedCarrier.time_out_once = {attempt_id}
    campaigns_tick(now=TUESDAY_10)
    attempt = CampaignAttempt.objects.get()
    assert (attempt.state, attempt.dials, len(KeyedCarrier.placed)) == ("dialing", 1, 1)

    campaigns_tick(now=TUESDAY_10 + LEASE - timedelta(seconds=1))
    assert CampaignAttempt.objects.get().dials == 1  # within the lease: the first request may still answer
    campaigns_tick(now=TUESDAY_10 + LEASE + timedelta(seconds=1))

    attempt = CampaignAttempt.objects.select_related("call").get()
    assert (attempt.state, attempt.dials) == ("dialled", 2)
    assert [key for key, _ in KeyedCarrier.requests] == [attempt_id, attempt_id]
    assert KeyedCarrier.placed == {attempt_id: attempt.call.carrier_call_id}  # one call placed


@pytest.mark.django_db
def test_a_carrier_without_keys_never_gets_a_dial_twice(carrier_of, make_campaign, bavarian):
    carrier_of("forgetful", "ForgetfulCarrierAdapter")
    campaign = make_campaign(people=contacts(1), max_attempts=2)
    from campaigns_app.scheduler import campaign_step, campaigns_tick

    [attempt_id] = campaign_step(campaign_id=campaign.pk, now=TUESDAY_10)
    KeyedCarrier.time_out_once = {attempt_id}
    campaigns_tick(now=TUESDAY_10)
    campaigns_tick(now=TUESDAY_10 + LEASE * 3)
    assert len(KeyedCarrier.requests) == 1

    # Its call never ends (no events): after its grant and the grace, the attempt failed;
    # the retry is a new attempt with a new key.
    later = TUESDAY_10 + minutes(2 + 15 + 3)
    campaigns_tick(now=later)
    first = CampaignAttempt.objects.get(pk=attempt_id)
    assert (first.state, first.outcome, first.dials) == ("ended", "failed", 1)
    campaigns_tick(now=later + minutes(120))
    assert [key for key, _ in KeyedCarrier.requests][0] == attempt_id and len(KeyedCarrier.requests) == 2
    assert len({key for key, _ in KeyedCarrier.requests}) == 2


def _worker(stop, errors, now):
    """One job worker: ticks, and plays the carrier's ends of some calls, until told to stop."""
    from django.db import close_old_connections

    rng = random.Random(os.getpid() ^ threading.get_ident())
    try:
        while not stop.is_set():
            tick(now[0])
            for call in open_calls_any():
                if call.carrier_call_id and rng.random() < 0.5:
                    with KeyedCarrier.lock:
                        KeyedCarrier.active.discard(call.carrier_call_id)
                    try:
                        end_call(call, status=rng.choice(["completed", "no-answer", "busy"]), when=now[0])
                    except AssertionError:
                        pass  # the other worker ended it first
            now[0] += minutes(1)
    except Exception as exc:  # noqa: BLE001 - reported by the test
        errors.append(exc)
        stop.set()
    finally:
        close_old_connections()
        connection.close()


def open_calls_any():
    return list(Call.objects.filter(ended_at__isnull=True, carrier_call_id__isnull=False))


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_two_workers_dial_each_attempt_once_within_the_concurrency(carrier_of, make_campaign, bavarian):
    carrier_of("keyed", "KeyedCarrierAdapter")
    campaign = make_campaign(people=contacts(40), concurrency=3, max_attempts=2, retry_after_min=5)
    stop, errors, now = threading.Event(), [], [TUESDAY_10]
    workers = [threading.Thread(target=_worker, args=(stop, errors, now)) for _ in range(2)]
    for worker in workers:
        worker.start()
    deadline = threading.Event()
    for _ in range(600):
        if not CampaignContact.objects.filter(campaign=campaign).open().exists():
            break
        deadline.wait(0.1)
    stop.set()
    for worker in workers:
        worker.join(60)

    assert not errors, errors
    attempts = CampaignAttempt.objects.filter(campaign=campaign)
    keys = [key for key, _ in KeyedCarrier.requests]
    # One call placed per attempt, with the attempt's id as its key; a dial sent again
    # (the clock ran past the lease while the other worker waited for the carrier) went
    # with the same key and placed nothing new.
    assert set(keys) == set(attempts.values_list("pk", flat=True)) and attempts.count() > 40
    assert len(KeyedCarrier.placed) == attempts.count()
    assert len(keys) == sum(attempts.values_list("dials", flat=True))
    for attempt in attempts.select_related("call"):
        assert attempt.call.carrier_call_id in (None, KeyedCarrier.placed[attempt.pk])
    assert KeyedCarrier.peak <= 3
    per_contact = CampaignContact.objects.filter(campaign=campaign).values_list("attempts", flat=True)
    assert max(per_contact) <= 2
    assert not CampaignContact.objects.filter(campaign=campaign).open().exists()


KILLED_SETUP = """
import json
from datetime import datetime, UTC
from calls_app.models import Carrier
from calls_app.signing import new_nonce
from campaigns_app import services
from campaigns_app.contact_rows import from_json
from console.numbers.services import number_create
from console.tenants.services import tenant_create

now = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
Carrier.objects.create(pk="fakerest", secret_nonce=new_nonce())
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
from django.conf import settings
settings.VOICE_CARRIER_ADAPTERS = {**settings.VOICE_CARRIER_ADAPTERS,
                                   "fakerest": "tests.campaigns_app.fake_carrier.RestCarrierAdapter"}
settings.VOICE_OUTBOUND_CARRIER = "fakerest"
from campaigns_app.scheduler import campaigns_tick
print(campaigns_tick(now=datetime(2026, 11, 24, 9, 0, tzinfo=UTC) + timedelta(seconds=OFFSET)))
"""
KILLED_STATE = """
import json
from campaigns_app.models import CampaignAttempt
print(json.dumps([{"id": a.pk, "state": a.state, "dials": a.dials, "sid": a.call.carrier_call_id}
                  for a in CampaignAttempt.objects.select_related("call")]))
"""


@pytest.mark.slow
def test_a_worker_killed_mid_dial_leaves_the_dial_to_the_next_with_the_same_key(tmp_path):
    service = LiveService(tmp_path)
    try:
        service.migrate()
        service.manage("shell", "-c", KILLED_SETUP)
        with FakeRestCarrier() as carrier:
            env = {**service.env, "FAKE_CARRIER_URL": carrier.url}
            carrier.hold()
            worker = subprocess.Popen([sys.executable, "manage.py", "shell", "-c", KILLED_TICK.replace("OFFSET", "0")],
                                      cwd=PROJECT, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, start_new_session=True)
            assert carrier.received.wait(60), worker.communicate(timeout=5)
            os.killpg(worker.pid, signal.SIGKILL)  # killed while the carrier holds its answer
            worker.wait(10)
            carrier.release()

            next_worker = subprocess.run(
                [sys.executable, "manage.py", "shell", "-c", KILLED_TICK.replace("OFFSET", str(int(LEASE.total_seconds()) + 1))],
                env=env, capture_output=True, text=True, timeout=120, cwd=PROJECT)
            assert next_worker.returncode == 0, next_worker.stderr[-1500:]
            [attempt] = json.loads(service.manage("shell", "-c", KILLED_STATE).strip().splitlines()[-1])
        keys = [key for key, _ in carrier.requests]
        assert keys == [attempt["id"], attempt["id"]]  # sent twice, with the same key
        assert carrier.placed == {attempt["id"]: attempt["sid"]}  # one call placed
        assert (attempt["state"], attempt["dials"]) == ("dialled", 2)
    finally:
        service.stop()
