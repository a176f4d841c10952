"""One POST to a customer's endpoint, bounded and guarded (SSRF).

- The connection is made by `console.outbound.connect`, the project's one SSRF guard:
  the host name is resolved once, every address it resolves to is checked, and the
  connection goes to a checked address. Without OUTBOUND_ALLOW_PRIVATE_TARGETS
  (production) an address that is not globally routable (loopback, private,
  link-local, the cloud metadata address, an IPv6 address that leads to one …) is
  refused.
- A port out of 1–65535 is refused (an endpoint stored before URLs were checked).
- A redirect is not followed: a 3xx answer is a failed attempt.
- The whole attempt (connect, TLS, send, answer) takes at most the timeout, however
  slowly the receiver trickles bytes; at most MAX_READ bytes of the answer are read.
- What the attempt's `error` says is shown to the tenant: a failed connection is
  "connection failed", nothing that would map the network behind it.
"""
import http.client
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from console import outbound

MAX_READ = 16 * 1024


@dataclass(frozen=True)
class Result:
    status: int | None
    error: str = ""
    # The first `read_limit` bytes of the answer's body (an assistant's HTTP tool
    # gives them back to the model; a webhook's receiver is only asked for its status).
    content: bytes = b""

    @property
    def ok(self):
        return self.status is not None and 200 <= self.status < 300


def post(url, *, body, headers, timeout, allow_private, read_limit=MAX_READ):
    parts = urlsplit(url)
    try:
        port = outbound.url_port(parts)
    except outbound.InvalidPort:
        return Result(None, "refused: the URL's port is not 1–65535")
    host = parts.hostname or ""
    started = time.monotonic()
    try:
        sock = outbound.connect(host, port, timeout=timeout, allow_private=allow_private)
    except outbound.Refused as exc:
        return Result(None, f"refused: {exc}")
    except OSError:
        return Result(None, outbound.CONNECTION_FAILED)
    with outbound.deadline(sock, timeout - (time.monotonic() - started)) as timed_out:
        try:
            if parts.scheme == "https":
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        except ssl.SSLCertVerificationError as exc:
            sock.close()
            return Result(None, f"{outbound.CONNECTION_FAILED}: TLS certificate not valid ({exc.verify_message})"[:300])
        except OSError:
            sock.close()
            return Result(None, f"{outbound.CONNECTION_FAILED}: TLS handshake failed")
        # The socket is set, so the connection class never connects (nor resolves)
        # itself; the class only decides the default port left out of the Host header.
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = kind(host, port, timeout=timeout)
        connection.sock = sock
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            connection.request("POST", path, body=body, headers={
                "Content-Type": "application/json", "User-Agent": "Stimmwerk-Webhooks/1", **headers,
            })
            response = connection.getresponse()
            content = response.read(read_limit)
        except (OSError, http.client.HTTPException) as exc:
            # The socket's own timeout may fire before the deadline's timer thread on a
            # loaded machine: both mean the answer did not come in time.
            if timed_out() or isinstance(exc, TimeoutError):
                return Result(None, f"no complete answer within {timeout:g} s")
            return Result(None, f"no valid answer: {exc.__class__.__name__}")
        finally:
            connection.close()
        if timed_out():  # cut short: what was read may look complete (headers end at EOF)
            return Result(None, f"no complete answer within {timeout:g} s")
    if 300 <= response.status < 400:
        return Result(response.status, "redirect not followed")
    return Result(response.status, "" if 200 <= response.status < 300 else f"HTTP {response.status}", content)
