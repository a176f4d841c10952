"""Bounded HTTP POSTs to a lane's provider, with their failures as LaneFailure outcomes.

Used by the gateway's chat lanes and by speech_app's remote speech lanes. Redirects
are not followed (a provider that redirects is misconfigured, and a redirect could
carry the key elsewhere). Requests to loopback addresses ignore proxy variables, so a
local provider is really called locally. `post` refuses unread an answer that
announces more than `max_bytes` (Content-Length); any other is read in chunks until
the attempt's deadline and refused as soon as it passes `max_bytes`, so a huge answer
is never held whole. `post_stream` hands the answer over line by line as it arrives
(a chat lane's server-sent events) or chunk by chunk (a speech lane's audio), with a deadline for connecting, one for the
first token, one for the whole answer and a limit on the quiet time between lines.
"""
import base64
import contextlib
import functools
import http.client
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from urllib.parse import unquote, urlsplit

from registry_app.lanes.failover import LaneFailure
from registry_app.probes import is_loopback

MAX_ANSWER_BYTES = 1024 * 1024
MAX_AUDIO_ANSWER_BYTES = 10 * 1024 * 1024
_CHUNK = 64 * 1024
# The longest cooldown a provider's Retry-After may ask for.
MAX_RETRY_AFTER_SEC = 300


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
_proxied = urllib.request.build_opener(_NoRedirect())


@dataclass(frozen=True)
class HttpAnswer:
    status: int
    headers: Message
    body: bytes

    @property
    def content_type(self):
        return self.headers.get_content_type() if self.headers is not None else ""


def _retry_after(headers):
    value = (headers.get("Retry-After") or "").strip() if headers is not None else ""
    return min(int(value), MAX_RETRY_AFTER_SEC) if value.isascii() and value.isdigit() else None


def _declared_length(headers):
    value = (headers.get("Content-Length") or "").strip() if headers is not None else ""
    return int(value) if value.isascii() and value.isdigit() else None


def _read(response, deadline, max_bytes):
    declared = _declared_length(response.headers)
    if declared is not None and declared > max_bytes:
        raise LaneFailure("bad_response", f"the answer announces {declared} bytes, more than {max_bytes}")
    body = bytearray()
    while True:
        if time.monotonic() > deadline:
            raise LaneFailure("timeout", "the answer did not arrive in time")
        chunk = response.read(_CHUNK)
        if not chunk:
            return bytes(body)
        body.extend(chunk)
        if len(body) > max_bytes:
            raise LaneFailure("bad_response", f"the answer is larger than {max_bytes} bytes")


def post(url, *, body, headers, timeout, max_bytes=MAX_ANSWER_BYTES):
    """The HttpAnswer of a 2xx; LaneFailure for everything else."""
    deadline = time.monotonic() + timeout
    opener = _direct if is_loopback(urlsplit(url).hostname) else _proxied
    request = urllib.request.Request(url, data=body, headers={"User-Agent": "stimmwerk-gateway", **headers},
                                     method="POST")
    try:
        with opener.open(request, timeout=timeout) as response:
            return HttpAnswer(response.status, response.headers, _read(response, deadline, max_bytes))
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code == 429:
            raise LaneFailure("rate_limited", "HTTP 429", retry_after=_retry_after(exc.headers)) from None
        if exc.code >= 500:
            raise LaneFailure("server_error", f"HTTP {exc.code}") from None
        if 300 <= exc.code < 400:
            raise LaneFailure("bad_response", f"HTTP {exc.code} (redirects are not followed)") from None
        raise LaneFailure("rejected", _refused(exc.code), status=exc.code) from None
    except (TimeoutError, socket.timeout):
        raise LaneFailure("timeout", f"no answer within {timeout:.1f} s") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, (TimeoutError, socket.timeout)):
            raise LaneFailure("timeout", f"no answer within {timeout:.1f} s") from None
        raise LaneFailure("connection_error", str(exc.reason)) from None
    except (OSError, ValueError, http.client.HTTPException) as exc:  # a reset mid-answer, a bad status line, …
        raise LaneFailure("connection_error", str(exc) or type(exc).__name__) from None



# --- Streams: an answer read line by line as it arrives (chat lanes' server-sent events) ---

MAX_STREAM_BYTES = MAX_ANSWER_BYTES
# The longest line of a stream (one event's data: a chunk of text, a tool call's delta).
MAX_LINE_BYTES = 256 * 1024


class Cancel:
    """Stops a turn's reading from another thread (the caller barged in): the lane's
    socket is shut down, so a read blocked on it returns at once."""

    def __init__(self):
        self._lock = threading.Lock()
        self._closers = []
        self.cancelled = False

    def on_cancel(self, closer):
        with self._lock:
            if not self.cancelled:
                self._closers.append(closer)
                return
        closer()

    def cancel(self):
        with self._lock:
            self.cancelled, closers, self._closers = True, self._closers, []
        for closer in closers:
            closer()


def _shut_down(sock):
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class StreamingAnswer:
    """An open 2xx answer whose body is read line by line, each read bounded.

    Before `progress()` is called the reads wait at most until `first_by` (the lane's
    first token); after it, each read waits at most `idle_sec` and never past `ends_by`
    (monotonic times). At most `max_bytes` in all, each line at most MAX_LINE_BYTES.
    Every way it can go wrong is a LaneFailure."""

    def __init__(self, sock, response, *, first_by, ends_by, idle_sec, max_bytes=MAX_STREAM_BYTES):
        # The socket itself: http.client lets go of it (connection.sock is None) once an
        # answer that closes the connection has begun, but it stays open under the answer.
        self.sock, self.response = sock, response
        self.first_by, self.ends_by, self.idle_sec = first_by, ends_by, idle_sec
        self.max_bytes, self.read_bytes, self.started = max_bytes, 0, False

    @property
    def content_type(self):
        return self.response.headers.get_content_type()

    def progress(self):
        """The lane has started to answer: from now on the idle time and the end bound the reads."""
        self.started = True

    def _bound(self):
        now = time.monotonic()
        if not self.started:
            left = self.first_by - now
            if left <= 0:
                raise LaneFailure("timeout", "no first token in time")
            return left, "no first token in time"
        left = self.ends_by - now
        if left <= 0:
            raise LaneFailure("timeout", "the answer did not end in time")
        if self.idle_sec < left:
            return self.idle_sec, f"the stream stalled for {self.idle_sec:g} s"
        return left, "the answer did not end in time"

    def lines(self):
        """The body's lines (bytes, without the line break), until it ends."""
        while True:
            wait, why = self._bound()
            self.sock.settimeout(max(wait, 0.001))
            try:
                line = self.response.readline(MAX_LINE_BYTES + 1)
            except (TimeoutError, socket.timeout):
                raise LaneFailure("timeout", why) from None
            except (OSError, ValueError, http.client.HTTPException) as exc:
                raise LaneFailure("connection_error", str(exc) or type(exc).__name__) from None
            if not line:
                return
            self.read_bytes += len(line)
            if self.read_bytes > self.max_bytes:
                raise LaneFailure("bad_response", f"the answer is larger than {self.max_bytes} bytes")
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                raise LaneFailure("bad_response", f"a line of the answer is longer than {MAX_LINE_BYTES} bytes")
            yield line.rstrip(b"\r\n")

    def chunks(self):
        """The body's bytes as they arrive (audio), each read bounded as a line is."""
        while True:
            wait, why = self._bound()
            self.sock.settimeout(max(wait, 0.001))
            try:
                chunk = self.response.read1(_CHUNK)
            except (TimeoutError, socket.timeout):
                raise LaneFailure("timeout", why) from None
            except (OSError, ValueError, http.client.HTTPException) as exc:
                raise LaneFailure("connection_error", str(exc) or type(exc).__name__) from None
            if not chunk:
                return
            self.read_bytes += len(chunk)
            if self.read_bytes > self.max_bytes:
                raise LaneFailure("bad_response", f"the answer is larger than {self.max_bytes} bytes")
            yield chunk

    def read_all(self):
        """The rest of the body at once (an answer that is not a stream), within the same bounds."""
        return b"\n".join(self.lines())

    def close(self):
        self.response.close()
        self.sock.close()


@functools.cache
def _tls():
    """The system's certificate authorities, loaded once per process."""
    return ssl.create_default_context()


def _connection(url, timeout):
    """(an http.client connection to `url`'s host, or through the proxy the environment
    names for it; the request target). Loopback is never proxied."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise LaneFailure("connection_error", "the endpoint is no HTTP URL")
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    proxy = None
    if not is_loopback(parts.hostname) and not urllib.request.proxy_bypass(parts.hostname):
        proxy = urllib.request.getproxies().get(parts.scheme)
    headers = {}
    if proxy:
        via = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if via.username:
            credentials = f"{unquote(via.username)}:{unquote(via.password or '')}".encode()
            headers["Proxy-Authorization"] = "Basic " + base64.b64encode(credentials).decode()
        if secure:  # a tunnel through the proxy (CONNECT)
            connection = http.client.HTTPSConnection(via.hostname, via.port or 80, timeout=timeout,
                                                     context=_tls())
            connection.set_tunnel(parts.hostname, port, headers=headers)
            return connection, target, {}
        return http.client.HTTPConnection(via.hostname, via.port or 80, timeout=timeout), url, headers
    if secure:
        return http.client.HTTPSConnection(parts.hostname, port, timeout=timeout, context=_tls()), target, {}
    return http.client.HTTPConnection(parts.hostname, port, timeout=timeout), target, {}


def post_stream(url, *, body, headers, connect_timeout, first_by, ends_by, idle_sec, cancel=None,
                max_bytes=MAX_STREAM_BYTES):
    """A StreamingAnswer of a 2xx whose head arrived before `first_by`; LaneFailure else.

    Connecting (and the TLS handshake) waits at most `connect_timeout` seconds, never
    past `first_by`; sending the request and the head of the answer must be done by
    `first_by` (a monotonic time). `cancel` (a Cancel) may stop it from another thread."""
    left = first_by - time.monotonic()
    if left <= 0:
        raise LaneFailure("timeout", "no time left to connect")
    connect_within = min(connect_timeout, left)
    connection, target, proxy_headers = _connection(url, connect_within)
    try:
        try:
            connection.connect()
        except (TimeoutError, socket.timeout):
            raise LaneFailure("timeout", f"no connection within {connect_within:.1f} s") from None
        sock = connection.sock
        if cancel is not None:
            cancel.on_cancel(lambda: _shut_down(sock))
            if cancel.cancelled:
                raise LaneFailure("connection_error", "cancelled")
        sock.settimeout(max(first_by - time.monotonic(), 0.001))
        connection.request("POST", target, body=body, headers={
            "User-Agent": "stimmwerk-gateway", "Content-Length": str(len(body)), **proxy_headers, **headers})
        response = connection.getresponse()
    except LaneFailure:
        connection.close()
        raise
    except (TimeoutError, socket.timeout):
        connection.close()
        raise LaneFailure("timeout", "no first token in time") from None
    except (OSError, ValueError, http.client.HTTPException) as exc:
        connection.close()
        raise LaneFailure("connection_error", str(exc) or type(exc).__name__) from None
    if response.status >= 300:
        headers_of = response.headers
        response.close()
        sock.close()
        if response.status == 429:
            raise LaneFailure("rate_limited", "HTTP 429", retry_after=_retry_after(headers_of))
        if response.status >= 500:
            raise LaneFailure("server_error", f"HTTP {response.status}")
        if response.status < 400:
            raise LaneFailure("bad_response", f"HTTP {response.status} (redirects are not followed)")
        raise LaneFailure("rejected", _refused(response.status), status=response.status)
    return StreamingAnswer(sock, response, first_by=first_by, ends_by=ends_by, idle_sec=idle_sec, max_bytes=max_bytes)


def _refused(status):
    """The detail of a 4xx: a refused key says so (the lane's status shows it)."""
    return f"HTTP {status}: the key was refused" if status in (401, 403) else f"HTTP {status}"
