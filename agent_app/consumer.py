"""The voice agent's WebSocket (`/api/voice/agent?token=…`): one conversation per
connection, in the frame protocol of docs/api.md.

Everything that blocks — recognition, the gateway, synthesis, the database — runs in
worker threads (`_off_loop`), so the event loop only moves frames and one slow
conversation never holds up another. Per connection there are three tasks besides
the receive loop: the turn worker (hear → think → speak, one utterance after the
other), the agent's speech being streamed (cancelled by barge-in), and the watchdog
that ends the session at the end of its grant or after the caller's silence.

Whatever ends a claimed session — a frame, an error close, the watchdog, a dropped
connection, or an exception anywhere in the consumer or its tasks — books its call
through `call_web_end` (once: a second end changes nothing)."""
import asyncio
import json
import logging
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import connections
from django.utils import timezone

from agent_app import conversation
from agent_app.audio import Endpointer, WireFormat
from agent_app.services import agent_session_claim
from calls_app import services as calls
from console.errors import ApiError
from console.parsers import MAX_DEPTH, json_loads

logger = logging.getLogger("agent_app")

# Close codes (docs/api.md): 4xxx are the agent's, after an error frame.
CLOSE_NORMAL, CLOSE_PROTOCOL, CLOSE_TOKEN, CLOSE_GRANT = 1000, 4400, 4401, 4402
CLOSE_IDLE, CLOSE_TOO_LARGE, CLOSE_TOO_FAST, CLOSE_FAILED = 4408, 4413, 4429, 4500
DTMF_DIGITS = frozenset("0123456789*#ABCD")
# Roles of the call's transcript lines (calls_app.services.call_web_line).
ASSISTANT, USER, SYSTEM = "assistant", "user", "system"
# Text frames are control frames of a few dozen bytes; longer ones are refused (4400).
MAX_TEXT_FRAME_BYTES = 4096
# The agent's audio goes out in frames of this length, paced to real time (ahead of it
# by AGENT_SPEECH_LEAD_SEC), so that barge-in can stop what was not sent yet.
SPEECH_CHUNK_SEC = 0.1
# The caller's audio may run ahead of the wall clock by this much (a burst after a
# network hiccup) before the 2x real-time limit applies.
AUDIO_BURST_SEC = 1.0


def _off_loop(function):
    """`function` as a coroutine run in a worker thread that closes its database
    connections afterwards (worker threads are not Django request threads)."""
    def run(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        finally:
            connections.close_all()

    return sync_to_async(run, thread_sensitive=False)


class FrameBudget:
    """A token bucket of frames: `rate` a second, in bursts of at most `rate`."""

    def __init__(self, rate, now):
        self.rate, self.tokens, self.at = rate, float(rate), now

    def take(self, now):
        """Whether one more frame arriving at `now` is within the budget."""
        self.tokens = min(self.rate, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


_claim = _off_loop(agent_session_claim)
_line = _off_loop(calls.call_web_line)
_disclosed = _off_loop(calls.call_web_disclosed)
_end_call = _off_loop(calls.call_web_end)
_heartbeat = _off_loop(calls.call_heartbeat)
_opening = _off_loop(conversation.opening)
_hear = _off_loop(conversation.hear)
_get_ready = _off_loop(conversation.get_ready)
_think = _off_loop(conversation.think)
_speak = _off_loop(conversation.speak)


class AgentConsumer(AsyncWebsocketConsumer):
    session = None
    closing = False
    booked = False
    close_sent = False
    tasks = ()
    speech_task = None

    # --- connection -----------------------------------------------------------------
    async def __call__(self, scope, receive, send):
        """Channels' dispatch loop, with a last net: if it ends in any way that did not
        book the claimed session (an exception the handlers let through, a cancellation
        of the connection's task), the call is booked here."""
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.closing = True
            self._stop_tasks()
            await self._book()

    async def dispatch(self, message):
        """Every message's handler; an exception in one ends the session like any error
        close (error frame, the call booked, 4500) instead of dropping the connection."""
        try:
            await super().dispatch(message)
        except StopConsumer:
            raise
        except Exception as exc:
            await self._fail(exc, message.get("type"))
            if message.get("type") == "websocket.disconnect":
                raise StopConsumer() from None  # the connection is gone: nothing more will come

    async def connect(self):
        token = parse_qs(self.scope.get("query_string", b"").decode("latin-1")).get("token", [""])[0]
        self.session = await _claim(token=token)
        # Accepted first in any case: a close code reaches the client only on an open socket.
        await self.accept()
        if self.session is None:
            await self._refuse("invalid_token", "The token is unknown, expired or already used; create a new "
                               "session.", CLOSE_TOKEN, end=False)
            return
        self.loop = asyncio.get_running_loop()
        self.wire = WireFormat(self.session.encoding, self.session.sample_rate)
        self.call_id = self.session.call_id
        self.language = self.session.language
        self.endpointer = Endpointer()
        self.started = self.last_frame = self.loop.time()
        self.frame_budget = FrameBudget(settings.AGENT_MAX_FRAMES_PER_SEC, self.started)
        self.dtmf_count = 0
        self.first_audio, self.audio_sec = None, 0.0
        self.barge_in_allowed = False
        # Since when it is the caller's turn (the agent finished speaking and has nothing
        # of the caller's to answer), None while the agent speaks or the caller waits
        # for its answer: only the caller's silence after that counts as idle.
        self.idle_since = None
        self.went_idle = asyncio.Event()
        self.utterances = asyncio.Queue()
        self.tasks = [asyncio.create_task(self._guarded(self._turns())),
                      asyncio.create_task(self._guarded(self._watchdog())),
                      asyncio.create_task(self._guarded(self._heartbeats()))]
        await self._send({"type": "session.started", "sessionId": self.session.id, "callId": self.call_id})

    async def disconnect(self, code):
        """However the connection ends (the client, a timeout, a drop): the call is booked
        (call_web_end books once) and the session's tasks stop."""
        self.closing = True
        self._stop_tasks()
        await self._book()

    # --- frames from the client -----------------------------------------------------
    async def receive(self, text_data=None, bytes_data=None):
        if self.closing or self.session is None:
            return
        self.last_frame = now = self.loop.time()
        if not self.frame_budget.take(now):
            return await self._refuse("too_many_frames", f"At most {settings.AGENT_MAX_FRAMES_PER_SEC} frames a "
                                      "second; send audio in frames of 20–200 ms.", CLOSE_TOO_FAST)
        if bytes_data is not None:
            await self._audio(bytes_data)
        else:
            await self._command(text_data)

    async def _audio(self, data):
        if len(data) > self.wire.max_frame_bytes:
            return await self._refuse("frame_too_large", f"Audio frames carry 20–200 ms; at most "
                                      f"{self.wire.max_frame_bytes} bytes.", CLOSE_TOO_LARGE)
        if not self.wire.whole(data):
            return await self._refuse("invalid_audio", "pcm_s16le frames carry whole 16-bit samples.",
                                      CLOSE_PROTOCOL)
        seconds = self.wire.seconds_of(data)
        if self.first_audio is None:
            self.first_audio = self.loop.time()
        else:
            self.audio_sec += seconds
            if self.audio_sec > 2 * (self.loop.time() - self.first_audio) + AUDIO_BURST_SEC:
                return await self._refuse("audio_too_fast", "Audio arrives faster than twice real time; stream it "
                                          "as it is captured.", CLOSE_TOO_FAST)
        for kind, value in self.endpointer.feed(self.wire.to_pcm16k(data)):
            if kind == "start":
                self._barge_in()
            else:
                self.utterances.put_nowait(value)
                self.idle_since = None  # the caller said something: now it waits for the agent

    async def _command(self, text):
        frame = None
        if len(text) <= MAX_TEXT_FRAME_BYTES and len(text.encode()) <= MAX_TEXT_FRAME_BYTES:
            try:
                frame = json_loads(text)  # the one JSON reader: bounded depth, no NaN, no NUL
            except ApiError:
                pass
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            return await self._refuse("invalid_frame", 'Text frames are JSON objects with a "type", of at most '
                                      f"{MAX_TEXT_FRAME_BYTES} bytes and {MAX_DEPTH} levels.", CLOSE_PROTOCOL)
        if frame["type"] == "end":
            await self._end(CLOSE_NORMAL)
        elif frame["type"] == "dtmf":
            digit = frame.get("digit")
            if not isinstance(digit, str) or digit not in DTMF_DIGITS:
                return await self._refuse("invalid_frame", "A dtmf frame carries one digit of 0-9, *, #, A-D.",
                                          CLOSE_PROTOCOL)
            if self.dtmf_count >= settings.AGENT_MAX_DTMF_PER_CALL:
                return await self._refuse("too_many_dtmf", f"At most {settings.AGENT_MAX_DTMF_PER_CALL} DTMF keys "
                                          "per session.", CLOSE_TOO_FAST)
            self.dtmf_count += 1
            await self._note(SYSTEM, f"DTMF {digit}")
        else:
            await self._refuse("unknown_frame_type", f"Unknown frame type '{frame['type'][:40]}'; send audio, "
                               '"end" or "dtmf".', CLOSE_PROTOCOL)

    # --- the conversation -----------------------------------------------------------
    async def _turns(self):
        """The opening, then each utterance in turn: hear, think, speak."""
        opening = await _opening(tenant=self.session.tenant, variables=self.session.variables)
        ready = asyncio.create_task(_get_ready(language=self.language))
        try:
            await self._say(opening.text, disclosure=opening.disclosure)
            self._callers_turn()  # while the recogniser may still be loading
            await ready
        finally:
            ready.cancel()  # a no-op once it finished
        while True:
            self._callers_turn()
            utterance = await self.utterances.get()
            self.idle_since = None
            await self._answer(utterance)

    def _callers_turn(self):
        """The agent spoke and has nothing to answer: the caller's silence counts from
        now (kept if it already counts)."""
        if self.idle_since is None and self.utterances.empty():
            self.idle_since = self.loop.time()
            self.went_idle.set()

    async def _answer(self, utterance):
        try:
            text = await _hear(utterance.pcm, language=self.language)
        except ApiError as exc:  # e.g. stt_busy: this utterance is lost, the call goes on
            return await self._send({"type": "error", "code": exc.code, "message": exc.message})
        if not text:
            return  # noise, a cough: nothing was said
        await self._send({"type": "transcript.final", "text": text, "start": utterance.start, "end": utterance.end})
        await self._note(USER, text)
        reply = await _think(text, language=self.language)
        await self._say(reply)

    async def _say(self, text, *, disclosure=""):
        """`text` as agent.speaking, audio, agent.done. The disclosure (the start of the
        opening) is spoken in full before barge-in can stop the agent."""
        # The disclosure is synthesised on its own, so that where its audio ends is exact.
        parts = [disclosure, text[len(disclosure):].strip()] if disclosure and text.startswith(disclosure) else [text]
        audio = [await _speak(part, language=self.language, voice=self.session.voice, wire=self.wire)
                 for part in parts if part]
        disclosure_bytes = len(audio[0]) if len(parts) == 2 else 0
        audio = b"".join(audio)
        self.barge_in_allowed = not disclosure
        self.speech_task = task = asyncio.create_task(self._stream(text, audio, disclosure_bytes))
        await asyncio.wait([task])  # a barge-in cancels it, the turns go on
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # a failure while speaking ends the session (_guarded)

    async def _stream(self, text, audio, disclosure_bytes):
        await self._send({"type": "agent.speaking", "text": text})
        await self._note(ASSISTANT, text)
        chunk = int(self.wire.bytes_per_second * SPEECH_CHUNK_SEC) & ~1
        began, lead = self.loop.time(), settings.AGENT_SPEECH_LEAD_SEC
        try:
            for offset in range(0, len(audio), chunk):
                await self.send(bytes_data=audio[offset:offset + chunk])
                sent = offset + chunk
                if disclosure_bytes and sent >= disclosure_bytes and not self.barge_in_allowed:
                    await _disclosed(call_id=self.call_id)
                    self.barge_in_allowed = True
                ahead = began + min(sent, len(audio)) / self.wire.bytes_per_second - lead - self.loop.time()
                if ahead > 0:
                    await asyncio.sleep(ahead)  # real-time pacing of the agent's voice
            if disclosure_bytes and not self.barge_in_allowed:
                await _disclosed(call_id=self.call_id)
                self.barge_in_allowed = True
        except asyncio.CancelledError:
            if not self.closing:
                await self._send({"type": "agent.interrupted"})
                await self._note(SYSTEM, "The caller interrupted the agent.")
            raise
        await self._send({"type": "agent.done"})

    def _barge_in(self):
        task = self.speech_task
        if task is not None and not task.done() and self.barge_in_allowed:
            task.cancel()

    async def _watchdog(self):
        """Ends the session at the end of its grant, or after AGENT_IDLE_TIMEOUT_SEC of the
        caller's silence: no frame from the client since the agent finished its turn
        (its speech, hearing and thinking do not count; a connection that hangs)."""
        grant_end = self.started + self.session.call.max_seconds
        timeout = settings.AGENT_IDLE_TIMEOUT_SEC
        while True:
            now = self.loop.time()
            if now >= grant_end:
                return await self._refuse("grant_ended", "The minutes granted to this session are used up.",
                                          CLOSE_GRANT)
            wake = grant_end
            if self.idle_since is not None:
                idle_end = max(self.last_frame, self.idle_since) + timeout
                if now >= idle_end:
                    return await self._refuse("idle_timeout", f"No frame arrived for {timeout} s after the "
                                              "agent's turn.", CLOSE_IDLE)
                wake = min(wake, idle_end)
            # Until then, or until the agent's next turn ends (when the silence starts).
            self.went_idle.clear()
            try:
                await asyncio.wait_for(self.went_idle.wait(), wake - now)
            except TimeoutError:
                pass

    async def _heartbeats(self):
        """Says every CALL_HEARTBEAT_SEC that this process still holds the call: if it
        dies, the sweep books the call up to the last heartbeat (calls_app's
        calls_orphaned_end). A call ended meanwhile (taken for orphaned) ends the session."""
        while True:
            await asyncio.sleep(settings.CALL_HEARTBEAT_SEC)
            try:
                live = await _heartbeat(call_id=self.call_id)
            except Exception:  # the database is away for a moment: the next beat may reach it
                logger.warning("Heartbeat of call %s failed", self.call_id, exc_info=True)
                continue
            if not live:
                return await self._refuse("agent_failed", "The call was ended by the server.", CLOSE_FAILED)

    # --- helpers --------------------------------------------------------------------
    async def _note(self, role, text):
        await _line(call_id=self.call_id, role=role, text=text, ts=timezone.now())

    async def _send(self, frame):
        if not self.closing:
            await self.send(text_data=json.dumps(frame, ensure_ascii=False))

    async def _refuse(self, code, message, close_code, *, end=True):
        await self._send({"type": "error", "code": code, "message": message})
        await self._end(close_code, book=end)

    async def _end(self, close_code, *, book=True):
        """Books the call at once (the client may never confirm the close) and closes."""
        if self.closing:
            return
        self.closing = True
        if book:
            await self._book()
        await self.close(code=close_code)

    async def _book(self):
        """Ends the claimed session's call and books it: the one booking path of every
        end. call_web_end books once, so a second call changes nothing."""
        if self.session is None or self.booked:
            return
        await _end_call(call_id=self.session.call_id)  # also before connect() got further
        self.booked = True

    async def _fail(self, exc, where):
        """The session cannot go on after `exc`: an error frame if the client can still
        get one, the call booked through the one path, and a 4500 close."""
        session_id = getattr(self.session, "id", "-")
        if isinstance(exc, OSError):  # e.g. uvicorn's ClientDisconnected: the client is gone
            logger.info("Voice agent session %s: the connection went away in %s (%r)", session_id, where, exc)
        else:
            logger.error("Voice agent session %s failed in %s", session_id, where, exc_info=exc)
        try:
            if not self.closing:
                code = exc.code if isinstance(exc, ApiError) else "agent_failed"
                await self._send({"type": "error", "code": code,
                                  "message": "The agent could not go on with the conversation."})
        except Exception as send_failed:  # the client cannot be told; it is still booked
            logger.info("Voice agent session %s: no error frame (%r)", session_id, send_failed)
        finally:
            self.closing = True
            try:
                await self._book()
            finally:
                await self._close_quietly(CLOSE_FAILED)

    async def _guarded(self, coroutine):
        """One of the session's tasks; its failure ends the session (_fail)."""
        try:
            await coroutine
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._fail(exc, "a task")

    async def close(self, code=None, reason=None):
        """The close is sent once, whoever ends the session first."""
        if self.close_sent:
            return
        self.close_sent = True
        await super().close(code=code, reason=reason)

    async def _close_quietly(self, code):
        try:
            await self.close(code=code)
        except Exception as exc:  # the connection is gone already
            logger.info("Voice agent session %s: no close frame (%r)", getattr(self.session, "id", "-"), exc)

    def _stop_tasks(self):
        for task in [*self.tasks, self.speech_task]:
            if task is not None and task is not asyncio.current_task():
                task.cancel()
