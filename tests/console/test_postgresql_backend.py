"""The PostgreSQL backend's health check (console/db/postgresql/base.py): no round trip
while the connection is quiet, Django's `SELECT 1` (and a new connection) once the
server has ended it; the hot reads' kept cursor. PostgreSQL only (CI's second run)."""
import pytest
from django.db import DatabaseError, connection, connections
from django.db.transaction import TransactionManagementError

pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(connection.vendor != "postgresql", reason="the PostgreSQL backend")]


@pytest.fixture
def persistent():
    """A connection of its own, outside the test's transaction, as a server worker has."""
    database = connections.create_connection("default")
    database.settings_dict["CONN_HEALTH_CHECKS"] = True
    database.health_check_enabled = True
    yield database
    database.close()


def new_request(database):
    # What Django does for a persistent connection when a request starts.
    database.close_if_unusable_or_obsolete()


def backend_pid(database):
    with database.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_the_project_uses_it():
    assert type(connections["default"]).__module__ == "console.db.postgresql.base"


def test_a_quiet_connection_is_reused_without_select_1(persistent, monkeypatch):
    pid = backend_pid(persistent)
    asked = []
    monkeypatch.setattr(type(persistent), "is_usable", lambda self: asked.append(1) or True)
    for _ in range(3):
        new_request(persistent)
        assert backend_pid(persistent) == pid
    assert asked == []


def test_a_connection_the_server_ended_is_replaced_before_the_query(persistent):
    pid = backend_pid(persistent)
    with connection.cursor() as cursor:
        # With a timeout, the call returns once the backend has exited (PostgreSQL 14+).
        cursor.execute("SELECT pg_terminate_backend(%s, 10000)", [pid])
        assert cursor.fetchone()[0] is True
    new_request(persistent)
    assert backend_pid(persistent) != pid  # no error: the check saw the end and reconnected


def rows_pid(database):
    return database.fetch_rows("SELECT pg_backend_pid(), %s::int", [7])


def test_hot_reads_keep_one_cursor_and_a_new_one_with_a_new_connection(persistent):
    pid = rows_pid(persistent)[0][0]
    kept = persistent._kept_cursor
    assert rows_pid(persistent) == [(pid, 7)] and persistent._kept_cursor is kept
    persistent.close()
    assert rows_pid(persistent)[0][0] != pid  # reconnected, and the old cursor is not used
    assert persistent._kept_cursor is not kept


def test_hot_reads_raise_djangos_errors_and_refuse_a_broken_transaction(persistent):
    with pytest.raises(DatabaseError):
        persistent.fetch_rows("SELECT 1/0", [])
    assert rows_pid(persistent)[0][1] == 7  # the connection goes on
    # What Atomic leaves behind when a statement failed inside it.
    persistent.in_atomic_block, persistent.needs_rollback = True, True
    try:
        with pytest.raises(TransactionManagementError):
            rows_pid(persistent)
    finally:
        persistent.in_atomic_block, persistent.needs_rollback = False, False
