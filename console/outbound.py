"""Connections to hosts that a tenant named (webhook endpoints; the assistants' HTTP
tools): the one guard against server-side request forgery (SSRF).

- `address_allowed`: whether an address may be connected to. IPv4: globally routable
  unicast only (`DENIED_V4` lists what is not, from IANA's special-purpose registry;
  Python's `is_global` must agree too). IPv6: only global unicast (`2000::/3`) outside
  `DENIED_V6`, and Python's `is_global`; an address that embeds an IPv4 address
  (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is judged
  by the IPv4 address it leads to, since a translator or relay would connect there
  (`[64:ff9b::a9fe:a9fe]` is 169.254.169.254 behind DNS64). Deprecated and special
  prefixes are refused whatever they embed: IPv4-compatible `::a.b.c.d`, site-local
  `fec0::/10`, NAT64's local-use `64:ff9b:1::/48` (whose embedding is the operator's
  choice), Teredo `2001::/32` (obsolete; a relay would reach the IPv4 client in it).
  `is_global` alone is not enough: it is true for the translation prefixes, and it
  differs between Python versions.
- `url_port`: the URL's port, 1–65535 (443/80 when none is given).
- `url_admit`: the one admission rule for a URL a tenant gives us to call (webhook
  endpoints, HTTP tools; calendars and speech endpoints next), applied when it is
  saved: https only, no user or password, a port of 1–65535, and a host that is a
  name or a public address written as addresses are written (`a.b.c.d`, or IPv6 in
  brackets). A host that an OS resolver would read as an IPv4 address written
  another way (`127.1`, `0x7f.1`, `2130706433`, `0177.0.0.1`, `127.0.0.1.`) is
  refused whatever it stands for. A name's addresses are checked at each connection
  (`connect`). `OUTBOUND_ALLOW_PRIVATE_TARGETS` (development only; the one switch)
  admits http on loopback and addresses that are not public.
- `connect`: resolves the host once, refuses it unless every address it resolves to is
  allowed, and connects to a checked address (no second lookup that a rebinding DNS
  answer could change). `allow_private` (development) allows every address.
- `deadline`: cuts a connection that is still in use after its time, however slowly
  the other side trickles bytes (a timeout per read does not bound the whole).

What the tenant is told must not make us an oracle of the internal network: `Refused`
says the same for a name that does not resolve and one that resolves to an address
that is not allowed, and never names the address; a connection that cannot be made
is "connection failed", never "refused", "No route to host" or "timed out".
"""
import contextlib
import ipaddress
import re
import socket
import threading
from typing import cast
from urllib.parse import SplitResult, urlsplit

from django.conf import settings
from django.utils.translation import gettext

from console.errors import ApiError, ValidationFailed

DENIED_V4 = tuple(ipaddress.ip_network(network) for network in (
    "0.0.0.0/8",  # "this network"
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",  # private
    "100.64.0.0/10",  # shared address space (carrier-grade NAT)
    "127.0.0.0/8",  # loopback
    "169.254.0.0/16",  # link-local: the cloud metadata address
    "192.0.0.0/24",  # IETF protocol assignments
    "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24",  # documentation
    "192.88.99.0/24",  # 6to4 relay anycast (deprecated)
    "198.18.0.0/15",  # benchmarking
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",  # reserved, and the broadcast address
))
GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")
DENIED_V6 = tuple(ipaddress.ip_network(network) for network in (
    "2001::/23",  # IETF protocol assignments, Teredo (2001::/32) among them
    "2001:db8::/32", "3fff::/20",  # documentation
    "5f00::/16",  # segment routing (SRv6) identifiers
))
NAT64_V6 = ipaddress.ip_network("64:ff9b::/96")  # the well-known prefix; the IPv4 address is the last 32 bits
SIXTOFOUR_V6 = ipaddress.ip_network("2002::/16")

CONNECTION_FAILED = "connection failed"


class Refused(Exception):
    """The target may not be reached. The message is safe to show the tenant."""


class InvalidPort(ValueError):
    pass


def address_allowed(address, *, allow_private=False) -> bool:
    """Whether a connection to `address` (a string or an `ipaddress` address) is allowed."""
    if allow_private:
        return True
    try:
        ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    except ValueError:
        return False
    return _ipv4_allowed(ip) if ip.version == 4 else _ipv6_allowed(ipaddress.IPv6Address(int(ip)))


def _ipv4_allowed(ip) -> bool:
    return ip.is_global and not any(ip in network for network in DENIED_V4)


def _ipv6_allowed(ip) -> bool:
    if ip.ipv4_mapped is not None:
        return _ipv4_allowed(ip.ipv4_mapped)
    if ip in NAT64_V6:
        return _ipv4_allowed(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip in SIXTOFOUR_V6:
        return _ipv4_allowed(ip.sixtofour)
    if ip not in GLOBAL_UNICAST_V6 or any(ip in network for network in DENIED_V6):
        return False  # e.g. ::/96 (IPv4-compatible), fec0::/10, fc00::/7, fe80::/10, 64:ff9b:1::/48, ff00::/8
    return ip.is_global


def url_port(parts) -> int:
    """The port of a `urlsplit` result: 1–65535 as written, else 443 (https) or 80.
    InvalidPort for anything else (99999, 0, signs, non-ASCII digits)."""
    hostport = parts.netloc.rpartition("@")[2]
    if hostport.startswith("["):
        after = hostport.partition("]")[2]
    else:
        after = hostport[hostport.index(":"):] if ":" in hostport else ""
    if after and not after.startswith(":"):
        raise InvalidPort("text after the host")
    text = after[1:]
    if not text:
        return 443 if parts.scheme == "https" else 80
    if not (text.isascii() and text.isdigit() and len(text) <= 5 and 1 <= int(text) <= 65535):
        raise InvalidPort(f"port {text[:10]!r} is not 1–65535")
    return int(text)


MAX_URL_LENGTH = 2000
# RFC 6761: `localhost` and every name under it are loopback (a resolver may answer so).
LOOPBACK_NAME = re.compile(r"^(?:.+\.)?localhost\.?$")
# What the WHATWG URL parser (and so a browser) takes for an IPv4 address: a host whose
# last label is a number, decimal or 0x-hex; inet_aton (and glibc's resolver) reads
# such hosts as addresses too, in parts of 1–4 numbers, octal with a leading 0.
_NUMBER = re.compile(r"^(?:[0-9]+|0x[0-9a-f]*)$")
NOT_PUBLIC = "Private, loopback and special addresses (and IPv6 addresses that lead to one) are not reached."
ODD_IPV4 = ("An IPv4 address is written as four decimal numbers (a.b.c.d); other spellings (127.1, 0x7f.1, "
            "2130706433, 0177.0.0.1) are not accepted.")


def _looks_like_ipv4(host: str) -> bool:
    labels = host.removesuffix(".").split(".")
    return bool(_NUMBER.match(labels[-1]))


def url_admit(url: object, *, refused: type[ApiError]) -> str:
    """`url` if a tenant's outbound request may be made to it (the module's rules), else
    `refused` (the app's 400, e.g. `tool_url_refused`) with `details.url`, or a 400
    `validation_error` on `url` for what is not a URL (not a string, over 2,000
    characters, unparsable, a port out of 1–65535)."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH:
        raise ValidationFailed.field("url", gettext("Send an https URL (at most {limit} characters).").format(limit=f"{MAX_URL_LENGTH:,}"))
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        raise ValidationFailed.field("url", gettext("Not a valid URL.")) from None
    if parts.scheme not in ("https", "http") or not host:
        raise refused(details={"url": [gettext("Must be an https URL with a host.")]})
    if parts.username is not None or parts.password is not None:
        raise refused(details={"url": [gettext("A URL without user or password is needed (requests are signed).")]})
    _port_checked(parts)
    literal = _address_literal(host, parts, refused)
    loopback = bool(LOOPBACK_NAME.match(host)) or (literal is not None and literal.is_loopback)
    allow_private = settings.OUTBOUND_ALLOW_PRIVATE_TARGETS
    if parts.scheme == "http" and not (loopback and allow_private):
        raise refused(details={"url": [gettext("Must be an https URL.")]})
    if not allow_private and (loopback or (literal is not None and not address_allowed(literal))):
        raise refused(details={"url": [gettext(NOT_PUBLIC)]})
    return url


def _port_checked(parts: SplitResult) -> int:
    try:
        return url_port(parts)
    except InvalidPort:
        raise ValidationFailed.field("url", gettext("The port must be a number from 1 to 65535 (or none: 443).")) from None


def _address_literal(host: str, parts: SplitResult,
                     refused: type[ApiError]) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address the host is written as, or None for a name. An IPv6 address only in
    brackets; an IPv4 address only as `a.b.c.d` (anything else that reads as a number
    is refused)."""
    if parts.netloc.rpartition("@")[2].startswith("["):
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            raise refused(details={"url": ["Not a valid IPv6 address in brackets."]}) from None
    if _looks_like_ipv4(host):
        try:
            return ipaddress.IPv4Address(host)  # four decimal numbers 0–255, no leading zeros
        except ValueError:
            raise refused(details={"url": [gettext(ODD_IPV4)]}) from None
    return None


def connect(host: str, port: int, *, timeout: float, allow_private: bool) -> socket.socket:
    """A TCP connection to `host`, checked as above. Refused, or OSError when the
    connection fails (tell the tenant CONNECTION_FAILED, nothing more)."""
    if not 1 <= port <= 65535:
        raise Refused(f"port {port} is not 1–65535")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, ValueError):  # not resolvable; a name too long, a NUL, a bad label
        infos = []
    addresses = [info[4][0] for info in infos]
    if not addresses or not all(address_allowed(address, allow_private=allow_private) for address in addresses):
        raise Refused(f"{host} is not a public host (it does not resolve, or it resolves to an address "
                      "that is not public)")
    # getaddrinfo gives IPv4 and IPv6 addresses as text; its stub also allows (int, bytes),
    # which only a Python built without IPv6 support returns (for an IPv6 answer).
    return socket.create_connection((cast(str, addresses[0]), port), timeout=timeout)


@contextlib.contextmanager
def deadline(sock: socket.socket, seconds: float):
    """Shuts `sock` down (both ways) if the block still runs after `seconds`, which makes
    every blocked or later read and write on it fail; yields a callable that tells
    whether that happened. The shutdown goes to the socket itself (through a
    duplicate), so a TLS wrapper made inside the block is cut too."""
    duplicate = sock.dup()
    fired = threading.Event()

    def cut():
        fired.set()
        with contextlib.suppress(OSError):
            duplicate.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(max(seconds, 0.0), cut)
    timer.daemon = True
    timer.start()
    try:
        yield fired.is_set
    finally:
        timer.cancel()
        timer.join()
        duplicate.close()
