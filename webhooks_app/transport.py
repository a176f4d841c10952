"""One POST to a customer's endpoint, bounded and guarded (SSRF).

- The host name is resolved once, every address it resolves to is checked, and the
  connection goes to a checked address (no second lookup that a rebinding DNS
  answer could change). Without WEBHOOKS_ALLOW_PRIVATE_TARGETS (production) an
  address that is not globally routable (loopback, private, link-local, the cloud
  metadata address …) is refused.
- A redirect is not followed: a 3xx answer is a failed attempt.
- Connect, send and every read are bounded by the timeout; at most MAX_READ bytes of
  the answer are read.
"""
import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_READ = 16 * 1024


@dataclass(frozen=True)
class Result:
    status: int | None
    error: str = ""

    @property
    def ok(self):
        return self.status is not None and 200 <= self.status < 300


class Refused(Exception):
    pass


def address_allowed(address, *, allow_private):
    ip = ipaddress.ip_address(address)
    if allow_private:
        return True
    if getattr(ip, "ipv4_mapped", None):
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def _connect(url, *, timeout, allow_private):
    parts = urlsplit(url)
    host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise Refused(f"cannot resolve {host}: {exc}") from None
    addresses = [info[4][0] for info in infos]
    refused = [address for address in addresses if not address_allowed(address, allow_private=allow_private)]
    if refused or not addresses:
        raise Refused(f"{host} resolves to an address that is not public ({refused[0] if refused else 'none'})")
    family, _, _, _, sockaddr = infos[0]
    sock = socket.create_connection((sockaddr[0], port), timeout=timeout)
    if parts.scheme == "https":
        sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
    return parts, host, sock


def post(url, *, body, headers, timeout, allow_private):
    try:
        parts, host, sock = _connect(url, timeout=timeout, allow_private=allow_private)
    except Refused as exc:
        return Result(None, f"refused: {exc}")
    except (OSError, ssl.SSLError) as exc:
        return Result(None, f"connection failed: {exc.__class__.__name__}: {exc}"[:300])
    # The socket is set, so the connection class never connects (nor resolves) itself;
    # the class only decides the default port left out of the Host header.
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(host, parts.port, timeout=timeout)
    connection.sock = sock
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request("POST", path, body=body, headers={
            "Content-Type": "application/json", "User-Agent": "Stimmwerk-Webhooks/1", **headers,
        })
        response = connection.getresponse()
        response.read(MAX_READ)
    except (OSError, http.client.HTTPException) as exc:
        return Result(None, f"{exc.__class__.__name__}: {exc}"[:300])
    finally:
        connection.close()
    if 300 <= response.status < 400:
        return Result(response.status, "redirect not followed")
    return Result(response.status, "" if 200 <= response.status < 300 else f"HTTP {response.status}")
