"""The one way the suite pins how many SQL statements something runs.

    with assert_query_count(1 + 1):  # the API key with its tenant; the counter row
        api_a.get("/v2/usage")

The count is exact (a query more is as much a failure as a query less), and a
failure lists the statements. The savepoints that `transaction.atomic` sets inside
the test's own transaction are bookkeeping, not work of the code under test, and are
left out on every database.

Authenticating an API key is part of the count: the block starts with the process's
cache of verified keys empty, so the key is looked up. `cached_keys=True` keeps the
cache as it is, for pinning a read whose key was verified a moment ago.
"""
from contextlib import contextmanager

from django.db import connection
from django.test.utils import CaptureQueriesContext

from console.credentials.verified import verified_keys

_BOOKKEEPING = ("SAVEPOINT ", "RELEASE SAVEPOINT ", "ROLLBACK TO SAVEPOINT ")


@contextmanager
def assert_query_count(expected, *, cached_keys=False):
    """Fails unless the block runs exactly `expected` statements. Yields the list of
    their SQL, filled when the block ends, for assertions about the statements."""
    if not cached_keys:
        verified_keys.clear()
    statements = []
    with CaptureQueriesContext(connection) as captured:
        yield statements
    statements.extend(q["sql"] for q in captured.captured_queries if not q["sql"].startswith(_BOOKKEEPING))
    listing = "\n".join(f"  {n}. {sql}" for n, sql in enumerate(statements, 1))
    assert len(statements) == expected, f"{len(statements)} statements, expected {expected}:\n{listing}"
