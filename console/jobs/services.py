"""Background jobs on django-q2 (docs/architecture.md, "Background jobs").

`job_enqueue("app.module.function", kwargs={...})` runs the function in a job worker
(`manage.py qcluster`, started by `make run` beside gunicorn): through the database by
default, through Redis when REDIS_URL is set. Call it after the commit
(`transaction.on_commit`), never from inside a transaction that may still roll back.
"""
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task

from console.jobs.schedule import NAME_PREFIX, PERIODIC_JOBS

RUNNER = "console.jobs.runner.run"


def backoff_seconds(attempt: int) -> int:
    """The wait before attempt `attempt + 1`: base, 2 x base, 4 x base … at most the cap."""
    return min(settings.JOBS_RETRY_BASE_SEC * 2 ** (attempt - 1), settings.JOBS_RETRY_MAX_SEC)


def job_enqueue(func: str, *, kwargs: dict | None = None, attempt: int = 1, max_attempts: int | None = None,
                delay: float = 0) -> None:
    """Queues one run of `func(**kwargs)` (JSON-like kwargs), now or after `delay` seconds."""
    max_attempts = max_attempts or settings.JOBS_MAX_ATTEMPTS
    args = (func, kwargs or {}, attempt, max_attempts)
    if delay <= 0 or settings.Q_CLUSTER.get("sync"):
        async_task(RUNNER, *args, task_name=f"{func} #{attempt}"[:100])
        return
    # A delayed run is a one-off schedule: the cluster's scheduler queues it when due,
    # and it survives a restart of every worker (it is a row, not a timer).
    Schedule.objects.create(
        name=None, func=RUNNER, args=repr(args), schedule_type=Schedule.ONCE, repeats=-1,
        next_run=timezone.now() + timedelta(seconds=delay),
    )


def job_enqueue_on_commit(func: str, *, kwargs: dict | None = None) -> None:
    """Queues the job so that it runs only if the current transaction commits.

    With the database queue the job's row is written in the transaction itself: it
    commits (or rolls back) with the work, and costs no second commit. With Redis it
    is pushed after the commit; a queue that is down then is logged, not raised (the
    request's work is committed and its answer stands)."""
    if "orm" in settings.Q_CLUSTER and not settings.Q_CLUSTER.get("sync") and transaction.get_connection().in_atomic_block:
        job_enqueue(func, kwargs=kwargs)
        return
    transaction.on_commit(lambda: job_enqueue(func, kwargs=kwargs), robust=True)


@transaction.atomic
def schedules_sync() -> list[str]:
    """Makes the schedule rows of PERIODIC_JOBS match it; returns their names."""
    names = []
    for title, func, minutes in PERIODIC_JOBS:
        name = NAME_PREFIX + title
        Schedule.objects.update_or_create(name=name, defaults={
            "func": RUNNER, "args": repr((func, {}, 1, 1)), "schedule_type": Schedule.MINUTES,
            "minutes": minutes, "repeats": -1,
        })
        names.append(name)
    Schedule.objects.filter(name__startswith=NAME_PREFIX).exclude(name__in=names).delete()
    return names
