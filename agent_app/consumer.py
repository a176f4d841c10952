"""The voice agent's WebSocket (`/api/voice/agent?token=…`): the browser's transport of
the conversation core (agent_app/session.py), in the frame protocol of docs/api.md.

It only translates: binary frames are the caller's audio, text frames the controls
(`end`, `dtmf`), read by the one JSON reader; the conversation's events go out as text
frames and its speech as binary frames. Whatever ends a claimed session — a frame, an
error close, the conversation's watchdog, a dropped connection, or an exception
anywhere in the consumer or the conversation — books its call through the
conversation's one booking path (once: a second end changes nothing)."""
import json
import logging
from typing import Any
from urllib.parse import parse_qs

from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from agent_app import codes
from agent_app.audio import WireFormat
from agent_app.models import AgentSession
from agent_app.services import agent_session_claim
from agent_app.session import CallContext, Conversation, Transport, off_loop
from calls_app import services as calls
from console.errors import ApiError
from console.parsers import MAX_DEPTH, json_loads

logger = logging.getLogger("agent_app")

# Text frames are control frames of a few dozen bytes; longer ones are refused (4400).
MAX_TEXT_FRAME_BYTES = 4096

_claim = off_loop(agent_session_claim)
_end_call = off_loop(calls.call_web_end)


class FrameBudget:
    """A token bucket of frames: `rate` a second, in bursts of at most `rate`."""

    def __init__(self, rate: float, now: float) -> None:
        self.rate, self.tokens, self.at = rate, float(rate), now

    def take(self, now: float) -> bool:
        """Whether one more frame arriving at `now` is within the budget."""
        self.tokens = min(self.rate, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class AgentConsumer(AsyncWebsocketConsumer, Transport):
    session: AgentSession | None = None
    conversation: Conversation | None = None
    closing = False
    close_sent = False

    # --- connection -----------------------------------------------------------------
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Channels' dispatch loop, with a last net: if it ends in any way that did not
        book the claimed session (an exception the handlers let through, a cancellation
        of the connection's task), the call is booked here."""
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.closing = True
            if self.conversation is not None:
                await self.conversation.stop()
            elif self.session is not None:
                await _end_call(call_id=self.session.call_id)

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Every message's handler; an exception in one ends the session like any error
        close (error frame, the call booked, 4500) instead of dropping the connection."""
        try:
            await super().dispatch(message)
        except StopConsumer:
            raise
        except Exception as exc:
            await self._fail(exc, str(message.get("type")))
            if message.get("type") == "websocket.disconnect":
                raise StopConsumer() from None  # the connection is gone: nothing more will come

    async def connect(self) -> None:
        token = parse_qs(self.scope.get("query_string", b"").decode("latin-1")).get("token", [""])[0]
        self.session = await _claim(token=token)
        # Accepted first in any case: a close code reaches the client only on an open socket.
        await self.accept()
        if self.session is None:
            await self.send_event({"type": "error", "code": codes.INVALID_TOKEN, "message": "The token is "
                                   "unknown, expired or already used; create a new session."})
            return await self.close(codes.CLOSES[codes.INVALID_TOKEN])
        self.wire = WireFormat(self.session.encoding, self.session.sample_rate)
        self.conversation = Conversation(self, CallContext.of_agent_session(self.session))
        self.frame_budget = FrameBudget(settings.AGENT_MAX_FRAMES_PER_SEC, self.conversation.started)
        self.conversation.start()
        await self.send_event({"type": "session.started", "sessionId": self.session.id,
                               "callId": self.session.call_id})

    async def disconnect(self, code: int) -> None:
        """However the connection ends (the client, a timeout, a drop): the call is booked
        (once) and the conversation's tasks stop."""
        self.closing = True
        if self.conversation is not None:
            await self.conversation.stop()

    # --- frames from the client -----------------------------------------------------
    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        conversation = self.conversation
        if self.closing or conversation is None or conversation.closing:
            return
        conversation.touch()
        if not self.frame_budget.take(conversation.loop.time()):
            return await conversation.refuse(codes.TOO_MANY_FRAMES, f"At most {settings.AGENT_MAX_FRAMES_PER_SEC} "
                                             "frames a second; send audio in frames of 20–200 ms.")
        if bytes_data is not None:
            await conversation.audio(bytes_data)
        else:
            await self._command(conversation, text_data or "")

    async def _command(self, conversation: Conversation, text: str) -> None:
        frame = None
        if len(text) <= MAX_TEXT_FRAME_BYTES and len(text.encode()) <= MAX_TEXT_FRAME_BYTES:
            try:
                frame = json_loads(text)  # the one JSON reader: bounded depth, no NaN, no NUL
            except ApiError:
                pass
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            return await conversation.refuse(
                codes.INVALID_FRAME, 'Text frames are JSON objects with a "type", of at most '
                f"{MAX_TEXT_FRAME_BYTES} bytes and {MAX_DEPTH} levels.")
        if frame["type"] == "end":
            await conversation.end()
        elif frame["type"] == "dtmf":
            await conversation.dtmf(frame.get("digit"))
        else:
            await conversation.refuse(codes.UNKNOWN_FRAME_TYPE, f"Unknown frame type "
                                      f"'{frame['type'][:40]}'; send audio, \"end\" or \"dtmf\".")

    # --- the transport: what the conversation sends ---------------------------------
    async def send_event(self, event: dict[str, Any]) -> None:
        if not self.close_sent:
            await self.send(text_data=json.dumps(event, ensure_ascii=False))

    async def send_audio(self, chunk: bytes) -> None:
        await self.send(bytes_data=chunk)

    async def close(self, code: int | None = None, reason: str | None = None) -> None:
        """The close is sent once, whoever ends the session first; a connection that is
        gone already needs none."""
        if self.close_sent:
            return
        self.close_sent = True
        try:
            # channels has no types: mypy takes Transport's close for the next in the MRO.
            await super().close(code=code, reason=reason)  # type: ignore[safe-super,call-arg,arg-type]
        except Exception as exc:  # the connection is gone already
            logger.info("Voice agent session %s: no close frame (%r)", getattr(self.session, "id", "-"), exc)

    async def _fail(self, exc: BaseException, where: str) -> None:
        if self.conversation is not None:
            return await self.conversation.fail(exc, where)
        # Before the conversation existed (connect() after the token was claimed).
        logger.error("Voice agent session %s failed in %s", getattr(self.session, "id", "-"), where, exc_info=exc)
        self.closing = True
        try:
            if self.session is not None:
                try:
                    await self.send_event({"type": "error", "code": codes.AGENT_FAILED,
                                           "message": "The agent could not go on with the conversation."})
                finally:
                    await _end_call(call_id=self.session.call_id)
        finally:
            await self.close(codes.CLOSES[codes.AGENT_FAILED])
