"""The media stream of every carrier kind that has one (`/voice/<kind>/<carrier_id>/stream`):
a phone call's transport of the conversation core, parameterised by the kind's codec
(calls_app/kinds: Twilio's Media Streams is one), which parses the carrier's frames into
start, audio, DTMF, mark and stop, and writes our audio, marks and clears.

The lifecycle is the same for every kind: the start must come within
PHONE_HANDSHAKE_TIMEOUT_SEC; its token is the one our webhook answer handed the carrier
for this call, single-use, at most AGENT_TOKEN_TTL_SEC old, and valid only with the
carrier's call id of its call (anything else closes the socket and books nothing); the
carrier's frames are held to AGENT_MAX_FRAMES_PER_SEC; whatever breaks the protocol is
logged with the connection's id and closes the socket; the socket is closed once and
the recording stored once; a call that had begun is booked once, like every end."""
import asyncio
import logging
from typing import Any

from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from agent_app import codes
from agent_app.audio import PhoneWire
from agent_app.codes import CLOSE_FAILED, CLOSE_PROTOCOL, CLOSE_TOKEN
from agent_app.consumer import FrameBudget
from agent_app.phone import PhoneBridge, connection_id
from agent_app.services import agent_session_claim
from agent_app.session import off_loop
from calls_app import phone_calls
from calls_app.kinds import KINDS
from calls_app.kinds.base import CarrierKind, CodecError, MediaCodec, MediaEvent

logger = logging.getLogger("agent_app.phone")

_claim = off_loop(agent_session_claim)
_transfer = off_loop(phone_calls.carrier_transfer)


class MediaStreamConsumer(PhoneBridge, AsyncWebsocketConsumer):
    """One carrier's media stream; `kind_name` is bound by agent_app/routing.py."""

    kind_name = ""
    close_sent = False
    marks = 0
    handshake: asyncio.Task[None] | None = None
    frame_budget: FrameBudget
    codec: MediaCodec
    kind: CarrierKind

    def __init__(self, *args: Any, kind_name: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kind_name = kind_name or self.kind_name
        self.carrier_id = "-"

    async def connect(self) -> None:
        self.kind = KINDS[self.kind_name]
        assert self.kind.codec is not None
        self.codec = self.kind.codec()
        self.carrier_id = self.scope["url_route"]["kwargs"]["carrier_id"]
        self.log_id = connection_id(self.scope.get("headers"))
        await self.accept()
        self.handshake = asyncio.create_task(self._start_deadline())

    async def _start_deadline(self) -> None:
        await asyncio.sleep(settings.PHONE_HANDSHAKE_TIMEOUT_SEC)
        if self.conversation is None:
            logger.error("Media stream %s of carrier %s: no start within %s s; closed", self.log_id, self.carrier_id,
                         settings.PHONE_HANDSHAKE_TIMEOUT_SEC)
            await self.close(CLOSE_PROTOCOL)

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Every message's handler; a protocol error or any exception closes the socket
        (and books a call that had begun) instead of leaving it hanging."""
        try:
            await super().dispatch(message)
        except StopConsumer:
            raise
        except CodecError as exc:
            logger.error("Media stream %s of carrier %s refused: %s", self.log_id, self.carrier_id, exc)
            await self._end(CLOSE_PROTOCOL)
        except Exception as exc:
            if self.conversation is not None:
                await self.conversation.fail(exc, str(message.get("type")))
            else:
                logger.error("Media stream %s of carrier %s failed", self.log_id, self.carrier_id, exc_info=exc)
                await self.close(CLOSE_FAILED)
            if message.get("type") == "websocket.disconnect":
                raise StopConsumer() from None

    async def disconnect(self, code: int) -> None:
        if self.handshake is not None:
            self.handshake.cancel()
        await self.finish()

    async def _end(self, close_code: int) -> None:
        if self.conversation is not None:
            await self.conversation.end(close_code)
        else:
            await self.close(close_code)

    # --- frames from the carrier --------------------------------------------------------
    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        conversation = self.conversation
        if self.close_sent or (conversation is not None and conversation.closing):
            return None
        event = self.codec.parse(text_data, bytes_data)
        if conversation is not None:
            conversation.touch()
            if not self.frame_budget.take(conversation.loop.time()):
                return await conversation.refuse(codes.TOO_MANY_FRAMES, "Too many messages a second.")
        if event.kind == "start":
            return await self._start(event)
        if event.kind == "ignore":
            return None
        if conversation is None:
            raise CodecError(f"'{event.kind}' before the stream's start")
        if event.kind == "audio":
            return await self.heard(event.audio)
        if event.kind == "dtmf":
            return await conversation.dtmf(event.digit)
        if event.kind == "stop":
            return await conversation.end()
        if event.kind == "error":
            logger.error("Media stream %s (call %s): the carrier reported an error (%s)", self.log_id,
                         conversation.call_id, event.audio.hex()[:32])
            return await conversation.end(CLOSE_FAILED)
        return None  # a mark: a part of the agent's speech was played out

    async def _start(self, event: MediaEvent) -> None:
        if self.conversation is not None:
            raise CodecError("a second start")
        session = await _claim(token=event.token, transport=self.kind.transport, carrier_id=self.carrier_id,
                               carrier_call_id=event.call_id)
        if session is None:
            logger.error("Media stream %s of carrier %s: an unknown, used or expired token, or one of another call "
                         "than %s; closed", self.log_id, self.carrier_id, event.call_id[:64])
            return await self.close(CLOSE_TOKEN)
        if self.handshake is not None:
            self.handshake.cancel()
        self.begin(session, PhoneWire(event.encoding or self.kind.wire[0], self.kind.wire[1]))
        assert self.conversation is not None
        self.frame_budget = FrameBudget(settings.AGENT_MAX_FRAMES_PER_SEC, self.conversation.started)

    # --- the transport: what the conversation sends -------------------------------------
    async def send_event(self, event: dict[str, Any]) -> None:
        if event.get("type") == "error":
            logger.info("Media stream %s (call %s): %s", self.log_id, self.conversation.call_id if self.conversation
                        else "-", event.get("code"))

    async def send_wire(self, chunk: bytes) -> None:
        for frame in self.codec.audio(chunk):
            await self._send(frame)

    async def clear_audio(self) -> None:
        await self._send(self.codec.clear())

    async def speech_sent(self) -> None:
        self.marks += 1
        await self._send(self.codec.mark(f"part-{self.marks}"))

    async def transfer(self, target: str, *, warm: bool = False) -> None:
        assert self.conversation is not None
        await _transfer(call_id=self.conversation.call_id, target=target, warm=warm)

    async def _send(self, frame: str | bytes | None) -> None:
        if self.close_sent or frame is None:
            return
        if isinstance(frame, bytes):
            await self.send(bytes_data=frame)
        else:
            await self.send(text_data=frame)

    async def close(self, code: int | None = None, reason: str | None = None) -> None:
        if self.close_sent:
            return
        self.close_sent = True
        await self.keep_recording()
        try:
            # Channels' close (the transport's own is the abstract one next in the MRO).
            await AsyncWebsocketConsumer.close(self, code=code, reason=reason)
        except Exception as exc:  # the connection is gone already
            logger.info("Media stream %s: no close frame (%r)", self.log_id, exc)
