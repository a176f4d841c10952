"""Fake carriers for the phone bridges' tests, speaking the real wire formats: a Twilio
Media Streams client (PyPI websockets) whose webhooks are signed by Twilio's own
`RequestValidator`, an Asterisk AudioSocket client over TCP, and a fake Twilio REST
server on loopback."""
import asyncio
import base64
import json
import struct
import time
import uuid
import xml.etree.ElementTree as ET

from twilio.request_validator import RequestValidator
from websockets.asyncio.client import connect

from agent_app.audio import WireFormat

ACCOUNT = "AC" + "0" * 32
TOKEN = "f" * 32
CALLER, CALLED = "+4917612345678", "+4930555000111"
RECEIVE_TIMEOUT = 150
FRAME = 0.02  # the carriers' 20 ms


def signed_post(client, path, params, token=TOKEN, *, signature=None, url=None):
    """POSTs the form as a carrier does, signed by Twilio's reference validator over the URL."""
    url = url or f"http://testserver{path}"
    headers = {}
    if signature is not False:
        headers["HTTP_X_TWILIO_SIGNATURE"] = signature or RequestValidator(token).compute_signature(url, params)
    return client.post(path, params, **headers)


def voice_params(call_sid, to=CALLED, caller=CALLER, direction="inbound"):
    return {"CallSid": call_sid, "AccountSid": ACCOUNT, "From": caller, "To": to, "CallStatus": "ringing",
            "Direction": direction, "ApiVersion": "2010-04-01"}


def new_call_sid():
    return "CA" + uuid.uuid4().hex


def stream_of(twiml):
    """(stream URL, token parameter) of a `<Connect><Stream>` answer, parsed as XML."""
    root = ET.fromstring(twiml)
    stream = root.find("./Connect/Stream")
    assert stream is not None, twiml
    token = {p.get("name"): p.get("value") for p in stream.findall("Parameter")}["token"]
    return stream.get("url"), token


class MediaStream:
    """A carrier's side of one Media Streams WebSocket: what it sent, what it got (with times)."""

    def __init__(self, url, call_sid, token, law="mulaw"):
        self.url, self.call_sid, self.token, self.law = url, call_sid, token, law
        self.wire = WireFormat(law, 8000)
        self.stream_sid = "MZ" + uuid.uuid4().hex
        self.seq = 0
        self.chunk = 0
        self.got = []  # (monotonic time, message)
        self.arrived = asyncio.Event()
        self.ws = None

    async def __aenter__(self):
        self.ws = await connect(self.url, max_size=1 << 22, open_timeout=RECEIVE_TIMEOUT)
        self.reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc):
        self.reader.cancel()
        await self.ws.close()

    async def _read(self):
        try:
            async for message in self.ws:
                self.got.append((time.monotonic(), json.loads(message)))
                self.arrived.set()
        except Exception:
            pass
        finally:
            self.arrived.set()

    async def send(self, message):
        self.seq += 1
        message["sequenceNumber"] = str(self.seq)
        await self.ws.send(json.dumps(message))

    async def start(self, token=None, call_sid=None, encoding=None):
        await self.send({"event": "connected", "protocol": "Call", "version": "1.0.0"})
        media_format = {"encoding": encoding or f"audio/x-{self.law}", "sampleRate": 8000, "channels": 1}
        await self.send({"event": "start", "streamSid": self.stream_sid, "start": {
            "streamSid": self.stream_sid, "accountSid": ACCOUNT, "callSid": call_sid or self.call_sid,
            "tracks": ["inbound"], "mediaFormat": media_format,
            "customParameters": {"token": self.token if token is None else token}}})

    async def media(self, audio):
        """Sends `audio` (wire bytes) as 20 ms media messages at real-time pace."""
        began = time.monotonic()
        for index, offset in enumerate(range(0, len(audio), 160)):
            self.chunk += 1
            await self.send({"event": "media", "streamSid": self.stream_sid, "media": {
                "track": "inbound", "chunk": str(self.chunk), "timestamp": str(self.chunk * 20),
                "payload": base64.b64encode(audio[offset:offset + 160]).decode()}})
            delay = began + (index + 1) * FRAME - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)  # the caller's pace, not a wait for the server

    async def media_until(self, silence_frame, condition, timeout=RECEIVE_TIMEOUT):
        """Sends silence in real time until `condition()` holds (or the socket closed)."""
        deadline = time.monotonic() + timeout
        while not condition():
            if self.ws.close_code is not None or time.monotonic() > deadline:
                raise AssertionError(f"gave up waiting; got {self.kinds()}")
            await self.media(silence_frame)

    def kinds(self):
        counts = {}
        for _, message in self.got:
            counts[message.get("event")] = counts.get(message.get("event"), 0) + 1
        return counts

    def of(self, event):
        return [(at, message) for at, message in self.got if message.get("event") == event]


# --- AudioSocket ------------------------------------------------------------------------

def as_frame(kind, payload=b""):
    return struct.pack(">BH", kind, len(payload)) + payload


class AudioSocketPeer:
    """Asterisk's side of an AudioSocket connection: frames out, frames in (with times)."""

    def __init__(self, port):
        self.port = port
        self.frames = []  # (monotonic time, kind, payload)
        self.closed = asyncio.Event()

    async def __aenter__(self):
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.task = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc):
        self.task.cancel()
        self.writer.close()

    async def _read(self):
        try:
            while True:
                kind, length = struct.unpack(">BH", await self.reader.readexactly(3))
                self.frames.append((time.monotonic(), kind, await self.reader.readexactly(length)))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.closed.set()

    async def send(self, kind, payload=b""):
        self.writer.write(as_frame(kind, payload))
        await self.writer.drain()

    async def audio(self, pcm8k):
        """Linear PCM (8 kHz) in 20 ms frames at real-time pace."""
        began = time.monotonic()
        for index, offset in enumerate(range(0, len(pcm8k), 320)):
            await self.send(0x10, pcm8k[offset:offset + 320].ljust(320, b"\0"))
            delay = began + (index + 1) * FRAME - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)

    async def audio_until(self, condition, timeout=RECEIVE_TIMEOUT):
        deadline = time.monotonic() + timeout
        while not condition():
            if self.closed.is_set() or time.monotonic() > deadline:
                raise AssertionError(f"gave up waiting; {len(self.frames)} frames in")
            await self.audio(b"\0" * 320)

    def audio_in(self, since=0.0):
        return [(at, payload) for at, kind, payload in self.frames if kind == 0x10 and at > since]


