"""The ASGI server as make run serves it (uvicorn with console.asgi_http's protocol):
a request that is not complete ASGI_REQUEST_TIMEOUT_SEC after its connection opened is
dropped, however slowly its bytes keep coming; complete requests and WebSocket sessions
are not touched. (uvicorn alone kept half-sent requests open for good.)"""
import asyncio
import re
import select
import socket
import time
from pathlib import Path

import pytest
from uvicorn.importer import import_from_string

from console.asgi_http import H11WithRequestTimeout
from tests.agent_app.conftest import AgentServer, Caller, dial, grant

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"
TIMEOUT = 1.0
LIMIT = 15  # seconds within which every wait for the server ends, dropped or not
HALF_SENT = [
    b"",  # connected, nothing sent
    b"GET /api/voice/agent?token=abc",  # half a request line
    b"GET /api/voice/agent?token=abc HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n",  # no end of the head
    b"POST /api/voice/agent/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{",  # half a body
]


@pytest.fixture
def server(transactional_db, settings):
    settings.ASGI_REQUEST_TIMEOUT_SEC = TIMEOUT
    settings.AGENT_WS_URL = ""
    settings.ALLOWED_HOSTS = ["127.0.0.1", "testserver"]
    server = AgentServer()
    yield server
    server.stop()


def _connect(server):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=LIMIT)
    return sock


def _until_closed(sock):
    """Everything the server sends until it closes the connection (its close ends the
    wait; a server that never closes fails with the socket's timeout)."""
    received = b""
    while True:
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            return received
        if not data:
            return received
        received += data


def test_half_sent_requests_are_dropped_within_the_timeout(server):
    sockets = []
    for head in HALF_SENT * 5:
        sock = _connect(server)
        sock.sendall(head)
        sockets.append(sock)
    began = time.monotonic()

    for sock in sockets:
        assert b"101 Switching Protocols" not in _until_closed(sock)
        sock.close()

    assert time.monotonic() - began < LIMIT


def test_a_request_trickled_byte_by_byte_is_dropped_at_its_deadline(server):
    sock = _connect(server)
    began = time.monotonic()
    trickle = iter(b"GET /api/voice/agent?token=" + b"a" * 10_000)
    closed = False
    while not closed and time.monotonic() - began < LIMIT:
        # One byte every 0.1 s, each within any per-read timeout; the server's close ends the loop.
        readable, _, _ = select.select([sock], [], [], 0.1)
        if readable:
            assert _until_closed(sock) == b""  # closed without an answer
            closed = True
            break
        try:
            sock.send(bytes([next(trickle)]))
        except OSError:  # reset by the server
            closed = True
    elapsed = time.monotonic() - began
    sock.close()

    assert closed
    assert TIMEOUT - 0.1 <= elapsed < TIMEOUT + 5


def _response(sock):
    """One HTTP/1.1 response with Content-Length: (status line, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    length = next(int(line.split(b":")[1]) for line in lines if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return lines[0], body


def test_complete_requests_are_answered_and_the_next_one_has_a_deadline_too(server):
    sock = _connect(server)
    sock.sendall(b"GET /widget/voice-demo/voice-demo.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    status, body = _response(sock)
    assert status == b"HTTP/1.1 200 OK" and body

    sock.sendall(b"GET /widget/voice-demo/voice-demo.js HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # half the next one
    began = time.monotonic()
    assert _until_closed(sock) == b""
    assert time.monotonic() - began < LIMIT
    sock.close()


def test_a_websocket_session_outlives_the_request_deadline(server, api_a):
    session = grant(api_a, server.port)

    async def talk():
        async with dial(session["url"]) as ws:
            caller = Caller(ws)
            await caller.until("agent.done")  # the opening, spoken in real time: seconds
            await ws.send('{"type": "end"}')
            await ws.wait_closed()
            return caller.frames[-1][0] - caller.frames[0][0], ws.close_code

    lasted, code = asyncio.run(talk())

    assert code == 1000
    assert lasted > 2 * TIMEOUT


def test_make_run_serves_the_websocket_with_this_protocol():
    """The tests above run the protocol the Makefile names; it must go on naming it."""
    command = re.search(r"\$\(BIN\)/uvicorn (.*?)&", MAKEFILE.read_text().replace("\\\n", " "), re.S).group(1)
    http = re.search(r"--http (\S+)", command).group(1)
    assert import_from_string(http) is H11WithRequestTimeout
