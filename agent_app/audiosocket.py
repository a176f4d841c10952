"""Asterisk's AudioSocket: a TCP listener that puts a PBX's calls through to the agent
(docs/telephony.md). Served by `manage.py audiosocket` (make run: RUN_AUDIOSOCKET_PORT).

The wire is the `asterisk` kind's (calls_app/kinds/asterisk.py: its frames and their
codec); this listener reads the frames, paces our audio to real time (barge-in drops
what was not sent yet) and runs the call's lifecycle.

The UUID is the one the dialplan's registration answered (`POST
/voice/asterisk/<carrier>/calls`): single-use, at most AGENT_TOKEN_TTL_SEC old — but for
one connection more when a warm hand-over came back unanswered (the dialplan's report
was answered `resume`: calls_app.warm_transfers), on which the conversation goes on;
or a warm hand-over's whisper UUID, on which the person hears the summary. A first
frame that is not such a UUID, a frame of an unknown kind, an audio frame over 200 ms
(the length field allows 64 KiB), a frame that does not arrive whole within
PHONE_HANDSHAKE_TIMEOUT_SEC of its first byte (a slow sender) or an error frame closes
the connection with an error log line; a hangup frame or a dropped connection ends the
call. A call that had begun is booked once however it ends."""
import asyncio
import logging
import socket
import struct
from typing import Any

from django.conf import settings

from agent_app import codes
from agent_app.audio import PhoneWire
from agent_app.codes import CLOSE_FAILED, CLOSE_NORMAL, CLOSE_PROTOCOL
from agent_app.conversation import speak_whole
from agent_app.phone import PhoneBridge, connection_id
from agent_app.services import agent_session_claim, agent_session_resume
from agent_app.session import off_loop
from calls_app.kinds.asterisk import AUDIO, FRAME_BYTES, HANGUP, KIND, AudioSocketCodec, frame, frame_limit
from calls_app.kinds.base import CodecError
from calls_app.warm_transfers import warm_whisper_claim

logger = logging.getLogger("agent_app.phone")

WIRE = PhoneWire(*KIND.wire)

_claim = off_loop(agent_session_claim)
_whisper = off_loop(warm_whisper_claim)
_resume = off_loop(agent_session_resume)
_speak = off_loop(speak_whole)


class AudioSocketCall(PhoneBridge):
    wire = WIRE
    closed = False

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.log_id = connection_id()
        self.outbox = bytearray()
        self.outbox_ready = asyncio.Event()
        self.outbox_drained = asyncio.Event()  # set whenever all our audio was sent
        self.sender: asyncio.Task[None] | None = None
        self.codec = AudioSocketCodec()

    async def run(self) -> None:
        try:
            await self._serve()
        except CodecError as exc:
            logger.error("AudioSocket %s refused: %s", self.log_id, exc)
            await self._end(CLOSE_PROTOCOL)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the PBX hung up without a hangup frame: the call ends below
        except Exception as exc:
            if self.conversation is not None:
                await self.conversation.fail(exc, "the AudioSocket")
            else:
                logger.error("AudioSocket %s failed", self.log_id, exc_info=exc)
        finally:
            if self.sender is not None:
                self.sender.cancel()
            await self.finish()
            await self.close(CLOSE_NORMAL)

    async def _end(self, close_code: int) -> None:
        if self.conversation is not None:
            await self.conversation.end(close_code)
        else:
            await self.close(close_code)

    async def _frame(self, first_byte_timeout: float | None) -> bytes:
        """The next frame (header and payload): its first byte within `first_byte_timeout`
        (None: no limit), the rest within PHONE_HANDSHAKE_TIMEOUT_SEC."""
        first = await asyncio.wait_for(self.reader.readexactly(1), first_byte_timeout)
        try:
            async with asyncio.timeout(settings.PHONE_HANDSHAKE_TIMEOUT_SEC):
                header = await self.reader.readexactly(2)
                (length,) = struct.unpack(">H", header)
                kind = first[0]
                limit = frame_limit(kind)
                if length > limit:
                    if kind == AUDIO and self.conversation is not None:
                        await self.conversation.refuse(codes.FRAME_TOO_LARGE, "Audio frames carry at most 200 ms.")
                    raise CodecError(f"a frame of kind 0x{kind:02x} with {length} bytes (at most {limit})")
                return first + header + await self.reader.readexactly(length)
        except TimeoutError:
            raise CodecError("a frame that did not arrive whole in time (a slow sender)") from None

    async def _serve(self) -> None:
        try:
            first = await self._frame(settings.PHONE_HANDSHAKE_TIMEOUT_SEC)
        except TimeoutError:
            raise CodecError("no UUID frame in time") from None
        start = self.codec.parse(None, first)
        session = await _claim(token=start.token, transport=KIND.transport)
        resumed = None
        if session is None:
            summary = await _whisper(token=start.token)
            if summary is not None:
                return await self._whisper(summary)
            # The caller back after a warm hand-over nobody answered (the dialplan's report said so).
            back = await _resume(token=start.token, transport=KIND.transport)
            if back is None:
                raise CodecError("an unknown, used or expired UUID")
            session, resumed = back
        self.begin(session, WIRE, resumed)
        self.sender = asyncio.create_task(self._pace())
        conversation = self.conversation
        assert conversation is not None  # begun
        while not conversation.closing:
            data = await self._frame(None)  # silence of a hung PBX: the conversation's idle timeout
            conversation.touch()
            event = self.codec.parse(None, data)
            if event.kind == "audio":
                await self.heard(event.audio)
            elif event.kind == "dtmf":
                await conversation.dtmf(event.digit)
            elif event.kind == "stop":
                return await conversation.end()
            elif event.kind == "error":
                logger.error("AudioSocket %s (call %s): the PBX reported an error (%s)", self.log_id,
                             conversation.call_id, event.audio.hex()[:32])
                return await conversation.end(CLOSE_FAILED)

    async def _whisper(self, summary: str) -> None:
        """A warm hand-over's person (the dialplan's Dial U() on their channel): the
        summary spoken at real time, then the hangup frame, after which Asterisk joins
        the caller. Bounded: the PBX hanging up ends the sender, and the summary's own
        length (plus a margin) is the most it waits."""
        self.sender = sender = asyncio.create_task(self._pace())
        audio = await _speak(summary, language="de", voice="", wire=WIRE)
        self.outbox_drained.clear()
        await self.send_wire(audio)
        drained = asyncio.create_task(self.outbox_drained.wait())
        try:
            await asyncio.wait([drained, sender], timeout=len(audio) / WIRE.bytes_per_second + 5,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            drained.cancel()

    # --- the transport ------------------------------------------------------------------
    async def send_event(self, event: dict[str, Any]) -> None:
        if event.get("type") == "error":
            logger.info("AudioSocket %s (call %s): %s", self.log_id,
                        self.conversation.call_id if self.conversation else "-", event.get("code"))

    async def send_wire(self, chunk: bytes) -> None:
        self.outbox += chunk
        self.outbox_ready.set()

    async def clear_audio(self) -> None:
        self.outbox.clear()  # barge-in: what was not sent yet is never sent

    async def _pace(self) -> None:
        """Our audio in 20 ms frames at real time: Asterisk plays what it gets as it gets it."""
        loop = asyncio.get_running_loop()
        due: float | None = None
        while True:
            if not self.outbox:
                due = None
                self.outbox_drained.set()
                self.outbox_ready.clear()
                await self.outbox_ready.wait()
                continue
            now = loop.time()
            if due is None or due < now - 0.1:
                due = now
            data = bytes(self.outbox[:FRAME_BYTES])
            del self.outbox[:FRAME_BYTES]
            for wire_frame in self.codec.audio(data):
                self.writer.write(wire_frame)
            await self.writer.drain()
            due += FRAME_BYTES / WIRE.bytes_per_second
            await asyncio.sleep(max(0.0, due - loop.time()))

    async def transfer(self, target: str, *, warm: bool = False) -> None:
        """Nothing to ask the PBX: the call keeps the number (call_hand_over), the hangup
        frame ends AudioSocket(), and the dialplan reads the number back and dials it."""
        return None

    async def close(self, code: int | None = None) -> None:
        if self.closed:
            return
        self.closed = True
        if self.sender is not None:
            self.sender.cancel()
        await self.keep_recording()
        try:
            self.writer.write(frame(HANGUP))
            await asyncio.wait_for(self.writer.drain(), 2)
        except (ConnectionError, TimeoutError, RuntimeError):
            pass
        self.writer.close()


async def serve(host: str | None = None, port: int | None = None, *, sock: socket.socket | None = None,
                ready: asyncio.Event | None = None) -> None:
    """Listens (on host:port, or the listening `sock`) until cancelled; `ready` (an
    asyncio.Event) is set once it listens."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await AudioSocketCall(reader, writer).run()

    if sock is not None:
        server = await asyncio.start_server(handle, sock=sock, limit=1 << 16)
    else:
        server = await asyncio.start_server(handle, host, port, limit=1 << 16)
    logger.info("AudioSocket listening on %s:%s", host, port)
    if ready is not None:
        ready.set()
    async with server:
        await server.serve_forever()
