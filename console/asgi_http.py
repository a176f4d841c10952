"""uvicorn's HTTP/1.1 protocol (h11) with a deadline for each request.

uvicorn has no header timeout: its keep-alive timeout runs only between requests and
stops at the next request's first byte, and `--h11-max-incomplete-event-size` bounds a
head's size, not its time. A client that sends half a request line or half its
headers (or trickles them a byte at a time) held its connection for good: 300 such
sockets were all still open after 70 s.

Served as `uvicorn console.asgi:application --http console.asgi_http:H11WithRequestTimeout`
(make run; docs/operations.md), a connection whose request — head and body — is not
complete ASGI_REQUEST_TIMEOUT_SEC after the connection opened (or after the previous
response on it) is closed. The deadline is absolute: bytes that keep trickling in do not
move it. A WebSocket upgrade is complete once its head arrived; from then on the
session's own limits apply (the agent's idle timeout, uvicorn's pings)."""
import h11
from django.conf import settings
from uvicorn.protocols.http.h11_impl import H11Protocol

# The client's states in which its request is not yet complete.
INCOMPLETE = (h11.IDLE, h11.SEND_BODY)


class H11WithRequestTimeout(H11Protocol):
    request_deadline = None  # the timer of the request under way

    def connection_made(self, transport):
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self):
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this connection has a deadline of its own

    def handle_websocket_upgrade(self, event):
        self._disarm()
        super().handle_websocket_upgrade(event)

    def connection_lost(self, exc):
        self._disarm()
        super().connection_lost(exc)

    def _arm(self):
        self._disarm()
        self.request_deadline = self.loop.call_later(settings.ASGI_REQUEST_TIMEOUT_SEC, self._expire)

    def _disarm(self):
        if self.request_deadline is not None:
            self.request_deadline.cancel()
            self.request_deadline = None

    def _expire(self):
        self.request_deadline = None
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            return
        if self.conn.their_state in INCOMPLETE:
            self.logger.debug("Request not complete after %s s: connection closed", settings.ASGI_REQUEST_TIMEOUT_SEC)
            self.transport.close()
