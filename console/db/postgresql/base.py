"""Django's PostgreSQL backend with a health check that costs no round trip while the
connection is quiet.

With CONN_HEALTH_CHECKS, Django sends `SELECT 1` before the first query of every
request on a persistent connection, to find connections the server has closed. That
doubled the round trips of most API requests (and on a machine whose cores the server
shares, each one waits to be scheduled: /health answered a quarter as fast). A server
that ends a connection (restart, termination, idle timeout) says so on the socket, a
termination message or the end of the stream, which makes an idle connection's socket
readable. So the check looks first whether anything arrived unasked (a poll of the
socket, no I/O): if nothing did, the connection is as the last request left it and the
check is done; if something did, Django's check runs (`SELECT 1`, reconnecting if it
fails). A peer that vanishes without a word (a cut cable) is found by neither check
before the query's own timeout.
"""
import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def fetch_rows(self, sql, params):
        """`cursor.execute(sql, params); cursor.fetchall()` for the hot reads
        (console/compiled.py): their parameters sent apart from the SQL (psycopg's
        server-side binding; the server then parses and plans a statement at about half
        the CPU, docs/performance-history.md), through one psycopg cursor kept with the
        connection instead of a new one per statement. It runs in Django's cursor
        wrapper like every statement, so Django's checks apply (health check, thread
        sharing, no statement in a broken transaction, its database errors) and what
        watches statements sees it: the queries logged in DEBUG and by tests, execute
        wrappers, tracing tools that wrap CursorWrapper.execute."""
        self.close_if_health_check_failed()
        self.ensure_connection()
        cursor = self._kept_cursor
        if cursor is None or cursor.connection is not self.connection or cursor.closed:
            cursor = self._kept_cursor = base.ServerBindingCursor(self.connection)
        wrapped = self._prepare_cursor(cursor)  # not closed: that would close the kept cursor
        wrapped.execute(sql, params)
        return wrapped.fetchall()

    _kept_cursor = None

    def close_if_health_check_failed(self):
        if self.connection is not None and self.health_check_enabled and not self.health_check_done \
                and not self.pool and _nothing_arrived(self.connection):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()


def _nothing_arrived(connection):
    """Whether the socket of an idle psycopg connection has nothing to read (a closed or
    broken socket reads as readable, so it fails this test too)."""
    try:
        readable, _writable, _failed = select.select([connection.fileno()], [], [], 0)
    except (OSError, ValueError):  # no socket any more
        return False
    return not readable
