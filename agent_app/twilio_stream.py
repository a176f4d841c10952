"""The Media Streams WebSocket of Twilio-compatible carriers
(`/voice/twilio/<carrier_id>/stream`): a phone call's transport of the conversation core.

In (JSON text frames): `connected`, `start` (`streamSid`, `callSid`,
`customParameters.token`, `mediaFormat`), `media` (base64 G.711, 20 ms), `dtmf`,
`mark` (a mark of ours whose audio was played), `stop`. Out: `media` (base64, in the
encoding the `start` announced: `audio/x-mulaw` or `audio/x-alaw`), a `mark` after each
spoken part, `clear` on barge-in.

The token is the one our TwiML handed the carrier for this call: single-use, at most
AGENT_TOKEN_TTL_SEC old, and valid only with the `callSid` of its call; anything else
closes the socket and books nothing. Whatever the carrier sends wrongly (no `start` in
PHONE_HANDSHAKE_TIMEOUT_SEC, a frame that is not a small JSON object, an unknown event,
another `streamSid`, base64 that is not 20–200 ms of the announced audio, audio faster
than twice real time) is logged with the connection's id and closes the socket; a call
that had begun is booked once, like every end."""
import asyncio
import base64
import binascii
import json
import logging

from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from agent_app import codes
from agent_app.audio import PhoneWire
from agent_app.codes import CLOSE_FAILED, CLOSE_PROTOCOL, CLOSE_TOKEN
from agent_app.consumer import FrameBudget
from agent_app.models import AgentSession
from agent_app.phone import PhoneBridge, connection_id
from agent_app.services import agent_session_claim
from agent_app.session import off_loop
from calls_app import phone_calls
from console.errors import ApiError
from console.parsers import json_loads

logger = logging.getLogger("agent_app.phone")

# Media messages carry 20 ms (a few hundred bytes of JSON); the start message a little more.
MAX_MESSAGE_BYTES = 8192
ENCODINGS = {"audio/x-mulaw": "mulaw", "audio/x-alaw": "alaw"}
# Media payloads: at least one sample, at most 200 ms of 8 kHz G.711.
MAX_MEDIA_BYTES = 1600

_claim = off_loop(agent_session_claim)
_transfer = off_loop(phone_calls.carrier_transfer)


class StreamRefused(Exception):
    """The carrier's stream broke the protocol; the message is logged, the socket closed."""


class TwilioStreamConsumer(PhoneBridge, AsyncWebsocketConsumer):
    stream_sid = None
    call_sid = None
    close_sent = False
    marks = 0
    handshake = None

    async def connect(self):
        self.carrier_id = self.scope["url_route"]["kwargs"]["carrier_id"]
        self.log_id = connection_id(self.scope.get("headers"))
        await self.accept()
        self.handshake = asyncio.create_task(self._start_deadline())

    async def _start_deadline(self):
        await asyncio.sleep(settings.PHONE_HANDSHAKE_TIMEOUT_SEC)
        if self.conversation is None:
            logger.error("Media stream %s of carrier %s: no start within %s s; closed", self.log_id, self.carrier_id,
                         settings.PHONE_HANDSHAKE_TIMEOUT_SEC)
            await self.close(CLOSE_PROTOCOL)

    async def dispatch(self, message):
        """Every message's handler; a protocol error or any exception closes the socket
        (and books a call that had begun) instead of leaving it hanging."""
        try:
            await super().dispatch(message)
        except StopConsumer:
            raise
        except StreamRefused as exc:
            logger.error("Media stream %s of carrier %s refused: %s", self.log_id, self.carrier_id, exc)
            await self._end(CLOSE_PROTOCOL)
        except Exception as exc:
            if self.conversation is not None:
                await self.conversation.fail(exc, message.get("type"))
            else:
                logger.error("Media stream %s of carrier %s failed", self.log_id, self.carrier_id, exc_info=exc)
                await self.close(CLOSE_FAILED)
            if message.get("type") == "websocket.disconnect":
                raise StopConsumer() from None

    async def disconnect(self, code):
        if self.handshake is not None:
            self.handshake.cancel()
        await self.finish()

    async def _end(self, close_code):
        if self.conversation is not None:
            await self.conversation.end(close_code)
        else:
            await self.close(close_code)

    # --- messages from the carrier ----------------------------------------------------
    async def receive(self, text_data=None, bytes_data=None):
        conversation = self.conversation
        if self.close_sent or (conversation is not None and conversation.closing):
            return
        if text_data is None or len(text_data) > MAX_MESSAGE_BYTES:
            raise StreamRefused("a frame that is not a JSON text of at most 8 KiB")
        try:
            message = json_loads(text_data)
        except ApiError:
            message = None
        if not isinstance(message, dict) or not isinstance(message.get("event"), str):
            raise StreamRefused('a frame that is not a JSON object with an "event"')
        event = message["event"]
        if conversation is not None:
            conversation.touch()
            if not self.frame_budget.take(conversation.loop.time()):
                return await conversation.refuse(codes.TOO_MANY_FRAMES, "Too many messages a second.")
        if event == "connected":
            return None
        if event == "start":
            return await self._start(message)
        if conversation is None:
            raise StreamRefused(f"'{event[:20]}' before the stream's start")
        if message.get("streamSid") != self.stream_sid:
            raise StreamRefused("a message of another streamSid")
        if event == "media":
            return await self.heard(self._payload(message))
        if event == "dtmf":
            digit = message.get("dtmf", {}).get("digit") if isinstance(message.get("dtmf"), dict) else None
            return await conversation.dtmf(digit)
        if event == "mark":
            return None  # a part of the agent's speech was played out
        if event == "stop":
            return await conversation.end()
        raise StreamRefused(f"an unknown event '{event[:20]}'")

    async def _start(self, message):
        if self.conversation is not None or self.stream_sid is not None:
            raise StreamRefused("a second start")
        start = message.get("start")
        if not isinstance(start, dict):
            raise StreamRefused("a start without its 'start' object")
        stream_sid, call_sid = start.get("streamSid", message.get("streamSid")), start.get("callSid")
        params = start.get("customParameters") if isinstance(start.get("customParameters"), dict) else {}
        media_format = start.get("mediaFormat") if isinstance(start.get("mediaFormat"), dict) else {}
        encoding = ENCODINGS.get(media_format.get("encoding", "audio/x-mulaw"))
        if not (isinstance(stream_sid, str) and 0 < len(stream_sid) <= 64 and isinstance(call_sid, str)
                and 0 < len(call_sid) <= 64):
            raise StreamRefused("a start without streamSid and callSid")
        if encoding is None or media_format.get("sampleRate", 8000) != 8000 or media_format.get("channels", 1) != 1:
            raise StreamRefused(f"a media format other than 8 kHz mono μ-law or A-law: {str(media_format)[:80]}")
        self.stream_sid = stream_sid
        session = await _claim(token=params.get("token"), transport=AgentSession.Transport.TWILIO,
                               carrier_id=self.carrier_id, carrier_call_id=call_sid)
        if session is None:
            logger.error("Media stream %s of carrier %s: an unknown, used or expired token, or one of another call "
                         "than %s; closed", self.log_id, self.carrier_id, call_sid[:64])
            return await self.close(CLOSE_TOKEN)
        self.call_sid = call_sid
        if self.handshake is not None:
            self.handshake.cancel()
        self.begin(session, PhoneWire(encoding, 8000))
        self.frame_budget = FrameBudget(settings.AGENT_MAX_FRAMES_PER_SEC, self.conversation.started)

    def _payload(self, message):
        media = message.get("media")
        payload = media.get("payload") if isinstance(media, dict) else None
        if not isinstance(payload, str) or len(payload) > 4 * MAX_MEDIA_BYTES // 3 + 4:
            raise StreamRefused("media without a payload of at most 200 ms")
        try:
            audio = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise StreamRefused("media whose payload is not base64") from None
        if not 0 < len(audio) <= MAX_MEDIA_BYTES:
            raise StreamRefused("media that is not 1 sample to 200 ms of 8 kHz audio")
        return audio

    # --- the transport: what the conversation sends -------------------------------------
    async def send_event(self, event):
        if event.get("type") == "error":
            logger.info("Media stream %s (call %s): %s", self.log_id, self.conversation.call_id if self.conversation
                        else "-", event.get("code"))

    async def send_wire(self, chunk):
        # 20 ms per media message, as the carrier sends its own.
        for offset in range(0, len(chunk), 160):
            await self._send({"event": "media", "streamSid": self.stream_sid,
                              "media": {"payload": base64.b64encode(chunk[offset:offset + 160]).decode()}})

    async def clear_audio(self):
        await self._send({"event": "clear", "streamSid": self.stream_sid})

    async def speech_sent(self):
        self.marks += 1
        await self._send({"event": "mark", "streamSid": self.stream_sid, "mark": {"name": f"part-{self.marks}"}})

    async def transfer(self, target):
        await _transfer(call_id=self.conversation.call_id, target=target)

    async def _send(self, message):
        if not self.close_sent:
            await self.send(text_data=json.dumps(message, separators=(",", ":")))

    async def close(self, code=None, reason=None):
        if self.close_sent:
            return
        self.close_sent = True
        await self.keep_recording()
        try:
            # Channels' close (the transport's own is the abstract one next in the MRO).
            await AsyncWebsocketConsumer.close(self, code=code, reason=reason)
        except Exception as exc:  # the connection is gone already
            logger.info("Media stream %s: no close frame (%r)", self.log_id, exc)
