"""Transactions the database aborted for a conflict with another one, run again.

PostgreSQL aborts one transaction of a lock cycle (`deadlock detected`, SQLSTATE
40P01) and, at stricter isolation levels, one of two that cannot be serialised (40001);
nothing of the aborted transaction is kept, so running it again is safe. SQLite
reports a write lock it could not get within its busy timeout as `database is
locked`, with the same meaning. Locking rows in one order (docs/architecture.md, "Row
locks") keeps these rare; this makes the few writes that must never be lost (a call's
end) survive one anyway.
"""
import functools
import logging
import random
import time

from django.db import DatabaseError, transaction

logger = logging.getLogger("console.db")

_CONFLICT_STATES = {"40P01": "a deadlock", "40001": "a serialization failure"}


def conflict_of(error):
    """What kind of conflict aborted the transaction ("a deadlock", …), or None when
    `error` is something else (a broken connection, a constraint, a bug)."""
    if not isinstance(error, DatabaseError):
        return None
    cause = error.__cause__
    state = getattr(cause, "sqlstate", None) or getattr(getattr(cause, "diag", None), "sqlstate", None)
    if state in _CONFLICT_STATES:
        return _CONFLICT_STATES[state]
    if "database is locked" in str(error):
        return "a locked database"
    return None


def retry_conflicts(function=None, *, attempts=5, pause=0.05):
    """Runs `function` (which must be one whole transaction of its own) again when the
    database aborted it for a conflict, at most `attempts` times in all, after a short
    random pause (so two victims of one cycle do not meet again at once). Inside an
    outer transaction it runs once: only the outer transaction could be run again."""
    def decorate(function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            if transaction.get_connection().in_atomic_block:
                return function(*args, **kwargs)
            for attempt in range(1, attempts + 1):
                try:
                    return function(*args, **kwargs)
                except DatabaseError as error:
                    conflict = conflict_of(error)
                    if conflict is None or attempt == attempts:
                        raise
                    logger.warning("%s was aborted by %s (attempt %s of %s); retrying", function.__qualname__,
                                   conflict, attempt, attempts)
                    # A backoff between attempts, not a wait for another thread's work.
                    time.sleep(random.uniform(0, pause * 2 ** (attempt - 1)))
            raise AssertionError("unreachable")

        return run

    return decorate(function) if function is not None else decorate
