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
    def bound_cursor(self):
        """A cursor like `cursor()` whose statements send their parameters apart from the
        SQL (psycopg's server-side binding) instead of quoting them into it. For the hot
        reads (console/compiled.py): the server then parses and plans a statement at
        about half the CPU (docs/performance-history.md), and a request's queries share the
        two cores with the app server. Django's client-side binding stays the default
        for everything else, whose SQL it was written for."""
        self.close_if_health_check_failed()
        self.ensure_connection()
        with self.wrap_database_errors:
            return self._prepare_cursor(base.ServerBindingCursor(self.connection))

    def fetch_rows(self, sql, params):
        """`cursor.execute(sql, params); cursor.fetchall()` on a bound cursor, for the
        hot reads (console/compiled.py), through one psycopg cursor kept with the
        connection instead of a new cursor and Django's wrapper per statement: about a
        third of the client's CPU for a one-row read. Django's checks stay (health
        check, thread sharing, no statement in a broken transaction, its database
        errors); with queries logged (DEBUG, tests counting queries) or execute
        wrappers installed, Django's cursor runs the statement, so it is seen."""
        if self.queries_logged or self.execute_wrappers:
            with self.bound_cursor() as cursor:
                cursor.execute(sql, params)
                return cursor.fetchall()
        self.close_if_health_check_failed()
        self.ensure_connection()
        self.validate_thread_sharing()
        self.validate_no_broken_transaction()
        with self.wrap_database_errors:
            cursor = self._kept_cursor
            if cursor is None or cursor.connection is not self.connection or cursor.closed:
                cursor = self._kept_cursor = base.ServerBindingCursor(self.connection)
            cursor.execute(sql, params)
            return cursor.fetchall()

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
