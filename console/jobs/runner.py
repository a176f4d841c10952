"""What a worker runs for every job of ours: the job's function, and on failure the
next attempt after an exponentially growing delay; the last failure is raised, so
that django-q records the job among its failed tasks (the dead letters, in the admin
under "Failed tasks"). A job's answer is kept only if it is a number or a flag."""
import logging

from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)


def run(func, kwargs, attempt, max_attempts):
    from console.jobs.services import backoff_seconds, job_enqueue

    try:
        return _stored(import_string(func)(**(kwargs or {})))
    except Exception as exc:
        if attempt >= max_attempts:
            logger.error("Job %s failed for good after %s attempt(s): %r", func, attempt, exc)
            raise
        delay = backoff_seconds(attempt)
        logger.warning("Job %s failed (attempt %s of %s), again in %s s: %r", func, attempt, max_attempts, delay, exc)
        job_enqueue(func, kwargs=kwargs, attempt=attempt + 1, max_attempts=max_attempts, delay=delay)
        return None


def _stored(result):
    """What django-q keeps of a job's answer in its table of successful tasks: a count,
    a flag or nothing. A richer answer (a webhook delivery with its payload, a lead) would
    be a pickled copy of callers' data there, which no erasure or retention finds."""
    return result if result is None or isinstance(result, (bool, int, float)) else None
