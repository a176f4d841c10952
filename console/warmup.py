"""Work a server process does once when it starts, so that no request pays for it.

Apps register tasks in their AppConfig.ready() with `at_worker_start(task)`: the
linter's lexicon, the engine probes' first answers; the URL configuration (which
imports every view module, the slowest of them) is always first. `gunicorn.conf.py` runs them in
every worker after it has loaded the application and before it accepts a connection
(gunicorn's post_worker_init), so a worker's first requests find them done, and
/health answers from probe answers that are already there. Tests, management commands
and runserver never run them: there, the first use pays, as it always did.

A task that fails is logged and skipped: the worker still starts, and the first
request that needs the missing part gets its usual error.
"""
import gc
import logging
import time

from django.urls import get_resolver

logger = logging.getLogger(__name__)

def import_url_configuration():
    """Django imports the URLconf, and with it every view, serializer and DRF module,
    on a process's first request."""
    get_resolver().url_patterns  # noqa: B018 - the attribute access is the import


_tasks = [import_url_configuration]


def at_worker_start(task):
    """Registers `task()` to run when a server worker starts (once, however often registered)."""
    if task not in _tasks:
        _tasks.append(task)


def warm_up(*, freeze=False):
    """Runs the registered tasks in order; returns their names with the seconds each took.

    `freeze` (server workers): afterwards, every object made so far (modules, the
    lexicon, caches) is moved out of the cyclic garbage collector's sight
    (`gc.freeze()`). They live as long as the worker anyway, and a full collection
    walked them all, a pause (long, with the lexicon loaded) that some unlucky request
    paid every few thousand requests."""
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
    if freeze:
        gc.freeze()
    logger.info("Worker warmed up: %s; %d objects frozen", ", ".join(f"{name} {seconds} s" for name, seconds in
                                                                     took.items()), gc.get_freeze_count())
    return took
