"""Work a server process does once when it starts, so that no request pays for it.

Apps register tasks in their AppConfig.ready() with `at_worker_start(task)`: the
linter's lexicon, the engine probes' first answers. `gunicorn.conf.py` runs them in
every worker after it has loaded the application and before it accepts a connection
(gunicorn's post_worker_init), so a worker's first requests find them done, and
/health answers from probe answers that are already there. Tests, management commands
and runserver never run them: there, the first use pays, as it always did.

A task that fails is logged and skipped: the worker still starts, and the first
request that needs the missing part gets its usual error.
"""
import logging
import time

logger = logging.getLogger(__name__)

_tasks = []


def at_worker_start(task):
    """Registers `task()` to run when a server worker starts (once, however often registered)."""
    if task not in _tasks:
        _tasks.append(task)


def warm_up():
    """Runs the registered tasks in order; returns their names with the seconds each took."""
    took = {}
    for task in _tasks:
        name = f"{task.__module__}.{task.__qualname__}"
        began = time.monotonic()
        try:
            task()
        except Exception:  # noqa: BLE001 - a worker without its warm-up still serves
            logger.exception("Warm-up task %s failed; its first use will do the work instead.", name)
            continue
        took[name] = round(time.monotonic() - began, 3)
    logger.info("Worker warmed up: %s", ", ".join(f"{name} {seconds} s" for name, seconds in took.items()))
    return took
