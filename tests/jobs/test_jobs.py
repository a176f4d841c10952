from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import Failure, Schedule, Success

from calls_app.carriers import sim_carrier
from calls_app.models import Call, UsageCounter
from calls_app.periods import period_of
from calls_app.services import RESERVATION_GRACE, call_request_outbound, reservations_release_expired
from console.jobs import runner
from console.jobs.schedule import NAME_PREFIX, PERIODIC_JOBS
from console.jobs.services import backoff_seconds, job_enqueue, schedules_sync
from speech_app.cache import RenderedAudio, render_cache, render_cache_evict
from tests.jobs import funcs

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_calls():
    funcs.CALLS.clear()
    yield
    funcs.CALLS.clear()


def test_migrate_leaves_one_schedule_row_per_periodic_job():
    rows = Schedule.objects.filter(name__startswith=NAME_PREFIX)
    assert sorted(row.name for row in rows) == sorted(NAME_PREFIX + title for title, _, _ in PERIODIC_JOBS)
    minutes = {row.name: row.minutes for row in rows}
    assert minutes[NAME_PREFIX + "probe the registry's lanes"] == 5


def test_sync_restores_an_edited_row_and_drops_a_job_that_is_no_longer_listed():
    title, func, minutes = PERIODIC_JOBS[0]
    Schedule.objects.filter(name=NAME_PREFIX + title).update(minutes=999, func="os.system")
    Schedule.objects.create(name=NAME_PREFIX + "an old job", func="os.getpid", schedule_type=Schedule.MINUTES)
    Schedule.objects.create(name="made in the admin", func="os.getpid", schedule_type=Schedule.MINUTES)
    schedules_sync()
    row = Schedule.objects.get(name=NAME_PREFIX + title)
    assert (row.func, row.minutes) == ("console.jobs.runner.run", minutes)
    assert func in row.args
    assert not Schedule.objects.filter(name=NAME_PREFIX + "an old job").exists()
    assert Schedule.objects.filter(name="made in the admin").exists()


def test_every_periodic_job_runs_without_failing(render_cache_dir):
    for _, func, _ in PERIODIC_JOBS:
        job_enqueue(func, max_attempts=1)
    assert not Failure.objects.exists()
    assert Success.objects.count() == len(PERIODIC_JOBS)


def test_backoff_doubles_from_the_base_up_to_the_cap(settings):
    settings.JOBS_RETRY_BASE_SEC, settings.JOBS_RETRY_MAX_SEC = 30, 200
    assert [backoff_seconds(attempt) for attempt in range(1, 6)] == [30, 60, 120, 200, 200]


def test_a_failing_job_is_retried_until_it_succeeds():
    job_enqueue("tests.jobs.funcs.fails_twice", kwargs={"label": "x"}, max_attempts=3)
    assert funcs.CALLS == ["x", "x", "x"]
    assert not Failure.objects.exists()


def test_a_job_failing_every_attempt_raises_its_last_error_for_the_worker_to_record():
    # A worker records the raised error as a failed task (the admin's dead letters);
    # the inline runner of the tests hands it to the caller instead.
    with pytest.raises(ConnectionError, match="y is down"):
        job_enqueue("tests.jobs.funcs.always_fails", kwargs={"label": "y"}, max_attempts=3)
    assert funcs.CALLS == ["y"] * 3


def test_a_retry_waits_in_a_one_off_schedule_row_when_a_worker_runs_the_jobs(settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": False}
    settings.JOBS_RETRY_BASE_SEC = 30
    before = timezone.now()
    runner.run("tests.jobs.funcs.always_fails", {"label": "z"}, 2, 5)
    retry = Schedule.objects.get(schedule_type=Schedule.ONCE)
    assert retry.func == "console.jobs.runner.run"
    assert "'tests.jobs.funcs.always_fails', {'label': 'z'}, 3, 5" in retry.args
    assert before + timedelta(seconds=60) <= retry.next_run <= timezone.now() + timedelta(seconds=60)


def test_expired_reservations_are_released_without_a_new_call(tenant_a):
    carrier = sim_carrier()
    call = call_request_outbound(tenant=tenant_a, carrier=carrier, to_e164="+491711234567")
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert counter.reserved_minutes == call.reserved_minutes > 0
    assert reservations_release_expired() == 1
    assert UsageCounter.objects.get(tenant=tenant_a).reserved_minutes == call.reserved_minutes  # still running
    long_after = timezone.now() + timedelta(seconds=call.max_seconds) + RESERVATION_GRACE + timedelta(minutes=1)
    assert period_of(long_after, tenant_a.time_zone) == counter.period or pytest.skip("the month ends meanwhile")
    reservations_release_expired(now=long_after)
    assert UsageCounter.objects.get(tenant=tenant_a).reserved_minutes == 0
    assert Call.objects.get(pk=call.pk).reserved_minutes == 0


def test_render_cache_job_evicts_down_to_a_lowered_bound(settings, render_cache_dir):
    settings.RENDER_CACHE_MAX_MB = 1
    cache = render_cache()
    for index in range(6):
        cache.put(RenderedAudio(key=f"{index:02d}" + "a" * 62, mp3=b"x" * 100_000, duration_sec=1.0))
    assert len(cache.entries()) == 6
    settings.RENDER_CACHE_MAX_MB = 0.25
    render_cache_evict()
    entries = render_cache().entries()
    assert sum(size for _, size, _ in entries) <= 0.25 * 1024 * 1024
    assert len(entries) == 2
