"""One bounded HTTP POST to a lane's provider, with its failures as LaneFailure outcomes.

Used by the gateway's chat lanes and by speech_app's remote speech lanes. Redirects
are not followed (a provider that redirects is misconfigured, and a redirect could
carry the key elsewhere). Requests to loopback addresses ignore proxy variables, so a
local provider is really called locally. An answer that announces more than
`max_bytes` (Content-Length) is refused unread; any other is read in chunks until
the attempt's deadline and refused as soon as it passes `max_bytes`, so a huge answer
is never held whole.
"""
import http.client
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from urllib.parse import urlsplit

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
        raise LaneFailure("rejected", f"HTTP {exc.code}") from None
    except (TimeoutError, socket.timeout):
        raise LaneFailure("timeout", f"no answer within {timeout:.1f} s") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, (TimeoutError, socket.timeout)):
            raise LaneFailure("timeout", f"no answer within {timeout:.1f} s") from None
        raise LaneFailure("connection_error", str(exc.reason)) from None
    except (OSError, ValueError, http.client.HTTPException) as exc:  # a reset mid-answer, a bad status line, …
        raise LaneFailure("connection_error", str(exc) or type(exc).__name__) from None
