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
import socket
import threading
from typing import cast

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
