"""The one SSRF guard (console/outbound.py): which addresses a tenant's URL may reach,
its port, and connections that refuse before connecting and end in time."""
import contextlib
import socket
import threading
import time
from urllib.parse import urlsplit

import pytest

from console import outbound

REFUSED = [
    # IPv4: not globally routable
    "0.0.0.0", "10.1.2.3", "100.64.0.1", "127.0.0.1", "169.254.169.254", "172.16.0.1", "192.0.0.9", "192.0.2.1",
    "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.51.100.7", "203.0.113.7", "224.0.0.1", "239.255.255.250",
    "240.0.0.1", "255.255.255.255",
    # IPv4-mapped: judged by the IPv4 address
    "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1",
    # NAT64, well-known prefix: the IPv4 address in the last 32 bits
    "64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b::c0a8:101", "64:ff9b::6440:1",
    # NAT64, local-use prefix (the embedding is the operator's): refused whatever it holds
    "64:ff9b:1::808:808", "64:ff9b:1:0:0:0:a9fe:a9fe",
    # 6to4: the IPv4 address in bits 16–48
    "2002:7f00:1::1", "2002:a9fe:a9fe::1", "2002:a00:1::1", "2002:c0a8:101:1::1",
    # IPv4-compatible (deprecated): refused whatever it holds
    "::7f00:1", "::a9fe:a9fe", "::808:808",
    # Teredo (obsolete): refused whatever server (bits 32–64) and client (the last 32
    # bits, inverted) it names
    "2001:0:808:808::80ff:fffe",  # client 127.0.0.1
    "2001:0:808:808::5601:5601",  # client 169.254.169.254
    "2001:0:a00:1::f7f7:fbfb",  # server 10.0.0.1
    "2001:0:808:808::f7f7:fbfb",  # server 8.8.8.8, client 8.8.4.4
    # deprecated and special IPv6
    "fec0::1", "fec0:1::a9fe:a9fe", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%1", "::", "::1", "ff02::1",
    "ff0e::1", "100::1", "2001:db8::1", "2001:2::1", "2001:10::1", "2001:20::1", "3fff::1", "5f00::1",
    "::ffff:0:a00:1",  # IPv4-translated (SIIT)
    "4000::1", "1000::1",  # not global unicast (2000::/3)
    # not an address
    "", "localhost", "1.2.3", "::g",
]
ALLOWED = [
    "8.8.8.8", "1.1.1.1", "93.184.215.14", "2a00:1450:4001:80b::200e", "2606:4700:4700::1111",
    "::ffff:8.8.8.8",  # mapped: public IPv4
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8: what DNS64 answers on an IPv6-only network
    "2002:808:808::1",  # 6to4 of 8.8.8.8
]


@pytest.mark.parametrize("address", REFUSED)
def test_addresses_that_are_not_public_or_lead_to_one_are_refused(address):
    assert outbound.address_allowed(address) is False


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_are_allowed_also_behind_a_translation_prefix(address):
    assert outbound.address_allowed(address) is True


def test_development_allows_every_address():
    assert all(outbound.address_allowed(address, allow_private=True) for address in REFUSED)


@pytest.mark.parametrize(("url", "port"), [
    ("https://h.example/x", 443), ("http://h.example/x", 80), ("https://h.example:1/x", 1),
    ("https://h.example:65535/x", 65535), ("https://h.example:/x", 443), ("https://[2a00:1450::1]:8443/x", 8443),
    ("https://[2a00:1450::1]/x", 443), ("https://u:p@h.example:8080/x", 8080),
])
def test_the_port_of_a_url(url, port):
    assert outbound.url_port(urlsplit(url)) == port


@pytest.mark.parametrize("url", [
    "https://h.example:99999/x", "https://h.example:65536/x", "https://h.example:0/x", "https://h.example:00000/x",
    "https://h.example:+80/x", "https://h.example:-1/x", "https://h.example: 80/x", "https://h.example:٨٠/x",
    "https://h.example:0443000/x", "https://h.example:80:80/x", "https://[2a00:1450::1]:70000/x",
    "https://[2a00:1450::1]x/x",
])
def test_ports_out_of_1_to_65535_or_not_plain_digits_are_invalid(url):
    with pytest.raises(outbound.InvalidPort):
        outbound.url_port(urlsplit(url))


@pytest.mark.parametrize("answer", ["64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "::7f00:1", "fec0::1",
                                    "2001:0:808:808::80ff:fffe", "::ffff:10.0.0.1", "10.0.0.1"])
def test_a_name_resolving_to_a_refused_address_is_refused_without_connecting(monkeypatch, answer):
    """Also when only one of its addresses is refused; and the message never names it."""
    family = socket.AF_INET6 if ":" in answer else socket.AF_INET
    public = (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("8.8.8.8", 443))
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [public, (family, socket.SOCK_STREAM, 6, "",
                                                                          (answer, 443))])
    connected = []
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: connected.append(a))
    with pytest.raises(outbound.Refused) as refused:
        outbound.connect("hooks.example", 443, timeout=1, allow_private=False)
    assert connected == [] and answer not in str(refused.value)


def test_a_name_that_does_not_resolve_is_told_like_a_private_one(monkeypatch):
    def unknown(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    with pytest.raises(outbound.Refused) as not_found:
        outbound.connect("nowhere.example", 443, timeout=1, allow_private=False)
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "",
                                                                 ("10.0.0.1", 443))])
    with pytest.raises(outbound.Refused) as private:
        outbound.connect("nowhere.example", 443, timeout=1, allow_private=False)
    assert str(not_found.value) == str(private.value)


@pytest.mark.parametrize("port", [0, 65536, 99999])
def test_connect_refuses_a_port_out_of_range(port):
    with pytest.raises(outbound.Refused):
        outbound.connect("127.0.0.1", port, timeout=1, allow_private=True)


def test_the_deadline_cuts_a_connection_whose_peer_trickles_bytes():
    """Each read gets a byte well within the socket's timeout; only the deadline ends it."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        stop = threading.Event()

        def trickle():
            peer, _ = server.accept()
            with peer:
                while not stop.wait(0.05):  # a byte every 50 ms, for as long as the client listens
                    try:
                        peer.sendall(b"x")
                    except OSError:
                        return

        thread = threading.Thread(target=trickle, daemon=True)
        thread.start()
        sock = outbound.connect("127.0.0.1", server.getsockname()[1], timeout=5, allow_private=True)
        started = time.monotonic()
        received = b""
        with sock, outbound.deadline(sock, 0.5) as timed_out:
            # The cut read ends as end of file, or as a reset when the peer's next byte
            # reached the shut socket first: either way it fails.
            with contextlib.suppress(ConnectionResetError):
                while chunk := sock.recv(1):
                    received += chunk
                    if time.monotonic() - started > 30:
                        break
        elapsed = time.monotonic() - started
        stop.set()
        thread.join(10)
    assert timed_out() and received and elapsed < 10


def test_the_deadline_leaves_a_connection_that_finishes_in_time_alone():
    with socket.create_server(("127.0.0.1", 0)) as server:
        sock = outbound.connect("127.0.0.1", server.getsockname()[1], timeout=5, allow_private=True)
        peer, _ = server.accept()
        with sock, peer:
            with outbound.deadline(sock, 30) as timed_out:
                peer.sendall(b"ok")
                assert sock.recv(2) == b"ok"
            assert not timed_out()
            peer.sendall(b"!")
            assert sock.recv(1) == b"!"  # still usable: the timer was cancelled, not fired
