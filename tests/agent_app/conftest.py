"""The voice agent served for real: uvicorn in a thread of the test process (so the
test's settings apply), on a loopback port of the agent's range, talking to the test
database; and a WebSocket client (PyPI websockets) that streams like a caller."""
import asyncio
import json
import socket
import threading
import time

import numpy
import pytest
import uvicorn
from websockets.asyncio.client import connect

from agent_app.audio import WireFormat
from tests.gateway_app.conftest import chat_server, refused_url  # noqa: F401 - the fake model lanes' fixtures
from tests.ports import worker_ports
from tests.speech_app.conftest import whisper_ready  # noqa: F401 (a fixture)
from tests.speech_app.speech_server import speech_server  # noqa: F401 (a fixture)
from tests.speech_app.synthesis import synthesised

PORTS = worker_ports(range(18500, 18600))  # this xdist worker's share
FRAME_SEC = 0.1
RECEIVE_TIMEOUT = 150  # every wait for the server ends (beyond the recognition deadline)
PCM = WireFormat("pcm_s16le", 16000)


def _listening_socket():
    for port in PORTS:
        sock = socket.socket()
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            sock.close()
            continue
        sock.listen(64)
        return sock
    raise RuntimeError(f"No free port in {PORTS}")


class AgentServer:
    """Listening before the thread starts (the socket is bound and listens here), so a
    client may connect at once: the kernel queues it until uvicorn accepts."""

    def __init__(self):
        from console.asgi import application

        self.sock = _listening_socket()
        self.port = self.sock.getsockname()[1]
        # As make run serves it: the HTTP protocol with a request deadline, frames of at most 64 KiB.
        self.server = uvicorn.Server(uvicorn.Config(application, lifespan="off", log_level="warning",
                                                    http="console.asgi_http:H11WithRequestTimeout",
                                                    ws="websockets-sansio", ws_max_size=1 << 16))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()


@pytest.fixture
def agent_server(transactional_db, settings):
    settings.AGENT_WS_URL = ""
    # Behaviour is under test, not speed: on a machine busy with other work one
    # recognition takes many times its usual time, and concurrent ones queue on the
    # one Whisper engine.
    settings.AGENT_STT_DEADLINE_SEC = 120
    server = AgentServer()
    yield server
    server.stop()


@pytest.fixture
def instant_speech(settings):
    """The agent's speech sent at once instead of in real time (where pacing is not under test)."""
    settings.AGENT_SPEECH_LEAD_SEC = 600


def grant(api, port, **body):
    """POST /api/voice/agent/sessions; the session's JSON with the URL on the test server."""
    response = api.post("/api/voice/agent/sessions", body, format="json")
    assert response.status_code == 201, response.content
    data = response.json()
    data["url"] = f"ws://127.0.0.1:{port}/api/voice/agent?token={data['token']}"
    return data


# The caller speaks with eSpeak NG's de+m3, the German voice Whisper base hears best
# (docs/performance-history.md; tests/speech_app/test_german_transcription.py). eSpeak's samples
# differ from one synthesis to the next: with plain "de", "Ich hätte gerne einen Termin am
# Montag." was heard at word error rates from 0 to 0.86 over six syntheses; with de+m3,
# at 0.00 in 21 of 21.
CALLER_VOICE = "de+m3"


def spoken(text, wire=PCM, voice=CALLER_VOICE):
    """German speech of the product's own synthesis, in the wire format: the same samples
    in every test and run (tests/speech_app/synthesis.py)."""
    speech = synthesised(text, voice=voice)
    return wire.from_pcm(speech.pcm, speech.sample_rate)


def silence(seconds, wire=PCM):
    return wire.from_pcm(numpy.zeros(int(seconds * 16000), dtype="<i2").tobytes(), 16000)


class Caller:
    """One side of a conversation: frames received are kept in order with their time."""

    def __init__(self, ws, wire=PCM):
        self.ws, self.wire = ws, wire
        self.frames = []  # (monotonic time, dict or bytes)

    async def next(self):
        message = await asyncio.wait_for(self.ws.recv(), RECEIVE_TIMEOUT)
        frame = json.loads(message) if isinstance(message, str) else message
        self.frames.append((time.monotonic(), frame))
        return frame

    async def until(self, kind):
        """Frames up to and including the next JSON frame of `kind`; returns that frame."""
        while True:
            frame = await self.next()
            if isinstance(frame, dict) and frame["type"] == "error" and kind != "error":
                raise AssertionError(f"error frame while waiting for {kind}: {frame}")
            if isinstance(frame, dict) and frame["type"] == kind:
                return frame

    async def stream(self, audio):
        """Sends `audio` as a microphone would: 100 ms frames at real-time pace. Returns
        the time the last frame was sent."""
        size = int(self.wire.bytes_per_second * FRAME_SEC)
        began = time.monotonic()
        for index, offset in enumerate(range(0, len(audio), size)):
            await self.ws.send(audio[offset:offset + size])
            delay = began + (index + 1) * FRAME_SEC - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)  # pacing of the caller's voice, not a wait for the server
        return time.monotonic()

    def texts(self, kind):
        return [frame for _, frame in self.frames if isinstance(frame, dict) and frame["type"] == kind]


def dial(url):
    return connect(url, max_size=1 << 22, open_timeout=RECEIVE_TIMEOUT)


class BookedCalls:
    """The ids of the calls the agent has booked as ended, told as each booking returns."""

    def __init__(self):
        self._ids = set()
        self._changed = threading.Condition()

    def add(self, call_id):
        with self._changed:
            self._ids.add(call_id)
            self._changed.notify_all()

    def wait_for(self, call_id, timeout=RECEIVE_TIMEOUT):
        """Whether the call `call_id` was booked within `timeout` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: call_id in self._ids, timeout)


@pytest.fixture
def booked_calls(monkeypatch):
    """For what the server does at a moment of its own choosing (noticing a dropped
    connection): the test waits for the agent's booking of the call to return, told by
    the consumer's own call of it, instead of looking at the database until it shows."""
    from agent_app import consumer, session

    booked, book = BookedCalls(), session._end_call

    async def book_and_tell(*, call_id):
        try:
            return await book(call_id=call_id)
        finally:
            booked.add(call_id)
    # The conversation's booking path, and the consumer's for a session that failed
    # before its conversation began.
    monkeypatch.setattr(session, "_end_call", book_and_tell)
    monkeypatch.setattr(consumer, "_end_call", book_and_tell)
    return booked


# --- Phone calls (tests/agent_app/phone.py and tests/twilio_fake.py have the fake carriers) ---

@pytest.fixture
def twilio_carrier(transactional_db, fake_twilio):
    """A twilio carrier whose REST API is the fake one on loopback."""
    from calls_app.services import carrier_create
    from tests.agent_app.phone import ACCOUNT, TOKEN

    carrier, _ = carrier_create(carrier_id="tw1", kind="twilio",
                                credentials={"account_sid": ACCOUNT, "auth_token": TOKEN, "api_base": fake_twilio.url})
    return carrier


@pytest.fixture
def called_number(tenant_a):
    from console.numbers.services import number_create
    from tests.agent_app.phone import CALLED

    return number_create(tenant=tenant_a, e164=CALLED)


class AudioSocketServer:
    """`manage.py audiosocket`'s listener in a thread of the test process (the test's
    settings and database apply), listening before the thread starts."""

    def __init__(self):
        from agent_app.audiosocket import serve

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.loop = asyncio.new_event_loop()
        self.task = None

        def run():
            asyncio.set_event_loop(self.loop)
            self.task = self.loop.create_task(serve(sock=self.sock))
            try:
                self.loop.run_until_complete(self.task)
            except (asyncio.CancelledError, Exception):
                pass

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def stop(self):
        self.loop.call_soon_threadsafe(lambda: self.task and self.task.cancel())
        self.thread.join(timeout=30)
        self.sock.close()


@pytest.fixture
def audiosocket(transactional_db, settings):
    settings.AGENT_STT_DEADLINE_SEC = 120
    server = AudioSocketServer()
    yield server
    server.stop()
