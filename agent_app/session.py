"""The conversation core: one call's conversation, whatever carries its audio.

A transport (the browser's WebSocket in consumer.py; phone bridges beside it) turns
its wire format into calls of `Conversation` — `audio()` with wire bytes, `dtmf()`,
`end()`, `touch()` for any other frame — and implements `Transport` for the way back:
events, the agent's audio in its wire format, clearing what the far end buffered on
barge-in, and the close. The conversation owns everything else: the opening with the
disclosure first, hearing (end-of-utterance detection, recognition), thinking,
speaking paced to real time, barge-in, DTMF notes, the grant's end, the caller's
silence, the heartbeat, and booking the call once however it ends.

Everything that blocks — recognition, the gateway, synthesis, the database — runs in
worker threads (`off_loop`), so the event loop only moves audio and one slow
conversation never holds up another. Per conversation there are four tasks: the turn
worker (hear → think → speak, one utterance after the other), the agent's speech
being streamed (cancelled by barge-in), the watchdog (grant and silence), and the
heartbeat; hearing (agent_app.hearing) runs its recognitions and end-of-turn decisions
as tasks of its own.

The first audio of a reply is what a caller waits for: recognition starts before the
end of the turn is decided (hearing), the reply is spoken while the model writes it,
sentence by sentence (agent_app.speaking: the first one is sent while the next is
written and synthesised), the opening's audio is made once per script and kept, and
the transcript lines and measurements are written beside the conversation rather
than before it goes on. Each reply measures itself: from the
caller's last speech to its first audio, split into the end-of-turn wait,
recognition, thinking and synthesis (`turn.latency`, stored with the call)."""
import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils import timezone

from agent_app import codes, conversation
from agent_app.audio import WireFormat
from agent_app.codes import CLOSE_FAILED, CLOSE_NORMAL
from agent_app.hearing import Hearing, Turn
from agent_app.listening import Ears
from agent_app.mind import Mind, Reply, assistant_of, filler
from agent_app.models import AgentSession
from agent_app.speaking import STAGE_COLUMNS, Lines, SpeechItem, TurnTiming, synthesise
from agent_app.spend import CallSpend
from agent_app.threads import off_loop
from calls_app import phone_calls
from calls_app import services as calls
from calls_app.warm_transfers import Resumed
from console import tool_codes
from console.assistants.models import REALTIME, Assistant
from console.assistants.selectors import assistant_of_call
from console.errors import ApiError
from console.tenants.models import Tenant
from registry_app.lanes.failover import LaneFailure

if TYPE_CHECKING:  # agent_app.realtime builds on this module
    from agent_app.realtime import RealtimeBridge

logger = logging.getLogger("agent_app")

DTMF_DIGITS = frozenset("0123456789*#ABCD")
# Roles of the call's transcript lines (calls_app.services.call_web_line).
ASSISTANT, USER, SYSTEM = "assistant", "user", "system"
# The agent's audio goes out in frames of this length, paced to real time (ahead of it
# by AGENT_SPEECH_LEAD_SEC), so that barge-in can stop what was not sent yet.
SPEECH_CHUNK_SEC = 0.1
# The caller's audio may run ahead of the wall clock by this much (a burst after a
# network hiccup) before the 2x real-time limit applies.
AUDIO_BURST_SEC = 1.0
# What a phone caller hears when the call's granted minutes are used up (then it ends).
GOODBYE = ("Die für dieses Gespräch vorgesehene Zeit ist leider abgelaufen. Vielen Dank für Ihren Anruf "
           "und auf Wiederhören.")
# What a phone caller hears when the carrier refused the hand-over the assistant announced
# (the conversation goes on).
# How a warm hand-over's note ends ("Weitergeleitet an Zentrale (+49…) nach Übergabe …").
WARM_NOTE = " nach Übergabe mit Zusammenfassung"
TRANSFER_FAILED = {"de": "Die Weiterleitung ist leider gerade nicht möglich. Wie kann ich Ihnen sonst helfen?",
                   "en": "I am sorry, I cannot put you through right now. How else can I help you?"}
# The assistant's `silenceTimeoutSec` passed once: a polite check; twice: the end.
SILENCE_CHECK = {"de": "Sind Sie noch da?", "en": "Are you still there?"}
SILENCE_END = {"de": "Ich höre Sie leider nicht mehr. Vielen Dank für Ihren Anruf und auf Wiederhören.",
               "en": "I cannot hear you any more. Thank you for calling, goodbye."}
# Seconds before an assistant's `maxDurationSec` at which GOODBYE starts, on every
# transport (it takes about six seconds to say): the call ends within its cap.
CAP_GOODBYE_LEAD_SEC = 8
# The channel the assistant is told (agent_app.mind's "Kanal" line, read by agent_app.policy):
# a phone call, or any other spoken conversation (the browser's).
PHONE_CHANNEL, SPOKEN_CHANNEL = "Telefon", "Sprache"
# The transcript's note of a barge-in (the transcript is read in the German console).
INTERRUPTED = "Der Anrufer hat die Assistenz unterbrochen."


_line = off_loop(calls.call_web_line)
_disclosed = off_loop(calls.call_web_disclosed)
_end_call = off_loop(calls.call_web_end)
_hand_over = off_loop(phone_calls.call_hand_over)
_heartbeat = off_loop(calls.call_heartbeat)
_turn_latency = off_loop(calls.call_turn_latency_record)
_opening = off_loop(conversation.opening)
_get_ready = off_loop(conversation.get_ready)
_transcriber = off_loop(conversation.transcriber)
_speak_whole = off_loop(conversation.speak_whole)
_cap_seconds = off_loop(calls.call_seconds_cap)


def _mind_for(context: "CallContext") -> Mind:
    # The version the call recorded when it was answered (the draft when none).
    found = assistant_of(tenant=context.tenant, assistant_id=context.assistant_id)
    assistant = assistant_of_call(assistant=found, version=context.assistant_version) if found else None
    return Mind(tenant=context.tenant, call_id=context.call_id, language=context.language, assistant=assistant,
                caller_e164=context.caller_e164, channel=context.channel)


_new_mind = off_loop(_mind_for)


def _think(mind: Mind, text: str, *, say: Callable[[str], None]) -> Coroutine[Any, Any, Reply]:
    return off_loop(mind.turn)(text, say=say)


def _resumed_reply(mind: Mind, **kwargs: Any) -> Coroutine[Any, Any, Reply]:
    return off_loop(mind.resume)(**kwargs)


def _plain(text: str) -> str:
    """Words only, case-folded: how end-call phrases and replies are compared."""
    return " ".join("".join(c if c.isalnum() else " " for c in text.casefold()).split())


def ends_the_call(text: str, phrases: Iterable[str]) -> bool:
    """Whether the agent's `text` says one of the assistant's `endCallPhrases` (as whole
    words, ignoring case and punctuation)."""
    said = f" {_plain(text)} "
    return any(f" {phrase} " in said for phrase in map(_plain, phrases) if phrase)


class Transport(ABC):
    """The edge of one conversation: what carries the caller's audio in and the agent's
    out. Implementations only translate; they decide nothing about the conversation."""

    wire: WireFormat  # the encoding of the audio in both directions
    # Seconds before the grant's end at which the agent says goodbye (GOODBYE) and hangs
    # up: a phone caller hears why the call ends. 0: the grant's end closes at once
    # (the browser's 4402 `grant_ended`).
    goodbye_lead_sec: float = 0

    @abstractmethod
    async def send_event(self, event: dict[str, Any]) -> None:
        """One event of the browser protocol (docs/api.md: session.started,
        transcript.partial, transcript.final, agent.speaking, turn.latency, agent.done,
        agent.interrupted, agent.note, error). A phone bridge maps what its peer understands
        (agent.done → a mark) and drops the rest."""

    @abstractmethod
    async def send_audio(self, chunk: bytes) -> None:
        """A piece of the agent's speech in `wire`'s format (the conversation paces it)."""

    async def clear_audio(self) -> None:
        """Barge-in: drop the agent's audio the far end still buffers (a media stream's
        `clear`); nothing to do where the conversation's pacing is the only buffer."""
        return None

    async def speech_sent(self) -> None:
        """The agent's audio of one spoken part (the disclosure, a turn; a sentence where
        synthesis streams sentence by sentence) was handed over in full: a media stream
        marks the spot (`mark`), so that what the caller heard is known."""
        return None

    # Whether the transport can hand its call over to a person (a phone line); the
    # browser cannot: an assistant's transfer ends its conversation with the note.
    can_transfer = False

    async def transfer(self, target: str, *, warm: bool = False) -> None:
        """Hands the call over to a person at `target` (E.164) on the carrier's side,
        before the conversation books it and closes: a twilio call is redirected to a
        `<Dial>`, an Asterisk dialplan dials the number the call keeps. `warm`: the
        person was rung and heard the summary (calls_app.warm_transfers); the caller
        joins them. Raises when the carrier refuses (the conversation then goes on)."""
        raise NotImplementedError("This transport cannot hand a call over.")

    @abstractmethod
    async def close(self, code: int) -> None:
        """Ends the connection with `code` (CLOSE_*); called once."""


@dataclass(frozen=True)
class CallContext:
    """What a conversation needs to know of its call, however it was set up (an agent
    session's token, a phone call's registration)."""

    session_id: str
    call_id: str
    tenant: Tenant
    language: str
    voice: str = ""
    variables: dict[str, str] = field(default_factory=dict)
    max_seconds: int = 0
    assistant_id: str = ""  # empty: the tenant's first assistant answers (agent_app.mind)
    assistant_version: int | None = None  # the call's (Call.assistant_version); None: the draft
    caller_e164: str = ""  # the caller's number where the call has one (not a web call)
    channel: str = SPOKEN_CHANNEL  # what the assistant is told: a spoken conversation, or the phone
    recorded: bool = False  # the call is recorded: its disclosure says so (conversation.RECORDING_NOTICE)
    # The call came back after its dialplan's unanswered warm hand-over: the conversation
    # goes on from there (no opening), its grant counted from the call's start.
    resumed: Resumed | None = None

    @classmethod
    def of_agent_session(cls, session: AgentSession, resumed: Resumed | None = None) -> "CallContext":
        """The context of a claimed session (its call loaded): a phone call's (a transport
        other than the browser's) tells the assistant the channel and the caller's number,
        the other party's of an outbound call; a withheld or erased number is none.
        `resumed`: the call came back to its conversation (agent_session_resume)."""
        call, caller, channel = session.call, "", SPOKEN_CHANNEL
        assert call.max_seconds is not None  # every call a session answers was granted its minutes
        if session.transport != "web":
            channel = PHONE_CHANNEL
            number = call.to_e164 if call.direction == "outbound" else call.from_e164
            caller = number if number.startswith("+") else ""
        return cls(session_id=session.id, call_id=session.call_id, tenant=session.tenant,
                   language=session.language, voice=session.voice, variables=session.variables,
                   max_seconds=call.max_seconds, assistant_id=session.assistant_id, caller_e164=caller,
                   channel=channel, recorded=call.recording_enabled, assistant_version=call.assistant_version,
                   resumed=resumed)


class Conversation:
    booked = False
    closing = False
    transfer_target: str | None = None  # set while the call is being handed over to a person
    transfer_label = ""  # how its note names the person ("Zentrale (+49…)"), else the number

    def __init__(self, transport: Transport, context: CallContext) -> None:
        self.transport = transport
        self.context = context
        self.wire = transport.wire
        self.call_id = context.call_id
        self.language = context.language
        self.loop = asyncio.get_running_loop()
        # What the call's named speech lanes have cost (agent_app.spend): within AGENT_SPEECH_MAX_EUR.
        self.spend = CallSpend(settings.AGENT_SPEECH_MAX_EUR)
        self.hearing = Hearing(language=self.language, loop=self.loop, on_turn=self._heard,
                               on_partial=self._partial, on_note=lambda text: self._write(self._note(SYSTEM, text)))
        self.endpointer = self.hearing.endpointer
        self.started = self.last_frame = self.last_speech = self.loop.time()
        if context.resumed is not None:  # the grant and the cap count from the call's start
            self.started -= context.resumed.elapsed
        # The call's longest duration: the grant, or the assistant's `maxDurationSec`
        # below it (set once the assistant is read); silence per the assistant too.
        self.max_seconds, self.capped = context.max_seconds, False
        self.silence_sec: int | None = None
        self.silence_checked = False
        self.dtmf_count = 0
        self.first_audio: float | None = None
        self.audio_sec = 0.0
        self.barge_in_allowed = False
        # Since when it is the caller's turn (the agent finished speaking and has nothing
        # of the caller's to answer), None while the agent speaks or the caller waits
        # for its answer: only the caller's silence after that counts as idle.
        self.idle_since: float | None = None
        self.went_idle = asyncio.Event()
        self.utterances: asyncio.Queue[Turn] = asyncio.Queue()  # hearing's Turns, answered one after the other
        self.speech_task: asyncio.Task[None] | None = None
        self.mind: Mind | None = None  # made when the conversation starts (it reads the assistant)
        # An assistant in realtime mode: its voice-agent lane's session hears, thinks and
        # speaks (agent_app.realtime) until it fails; None: the pipeline.
        self.realtime: "RealtimeBridge | None" = None
        self.realtime_task: asyncio.Task[None] | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.writes: set[asyncio.Future[Any]] = set()  # transcript lines and measurements being written (book() waits for them)

    def start(self) -> None:
        """The conversation's tasks: the opening and the turns, the watchdog, the heartbeat."""
        self.tasks = [asyncio.create_task(self._guarded(self._turns())),
                      asyncio.create_task(self._guarded(self._watchdog())),
                      asyncio.create_task(self._guarded(self._heartbeats()))]

    # --- what the transport hands in ------------------------------------------------
    def touch(self) -> None:
        """A frame of any kind arrived: the connection is alive."""
        self.last_frame = self.loop.time()

    async def audio(self, data: bytes) -> None:
        """The caller's audio in the wire format."""
        self.touch()
        if len(data) > self.wire.max_frame_bytes:
            return await self.refuse(codes.FRAME_TOO_LARGE, f"Audio frames carry 20–200 ms; at most "
                                     f"{self.wire.max_frame_bytes} bytes.")
        if not self.wire.whole(data):
            return await self.refuse(codes.INVALID_AUDIO, "pcm_s16le frames carry whole 16-bit samples.")
        seconds = self.wire.seconds_of(data)
        if self.first_audio is None:
            self.first_audio = self.loop.time()
        else:
            self.audio_sec += seconds
            if self.audio_sec > 2 * (self.loop.time() - self.first_audio) + AUDIO_BURST_SEC:
                return await self.refuse(codes.AUDIO_TOO_FAST, "Audio arrives faster than twice real time; stream it "
                                         "as it is captured.")
        if self.realtime is not None and self.realtime.failure is None:
            return await self.realtime.hear(data)
        for _ in self.hearing.feed(self.wire.to_pcm16k(data), data):  # the caller started speaking
            self.last_speech = self.loop.time()
            await self._barge_in()

    def _heard(self, turn: Turn) -> None:
        """Hearing decided that a turn of the caller ended (its recognition may still run)."""
        self.utterances.put_nowait(turn)
        self.idle_since = None  # the caller said something: now it waits for the agent
        self.silence_checked = False

    async def _partial(self, text: str, start: float) -> None:
        await self.send_event({"type": "transcript.partial", "text": text, "start": start})

    async def dtmf(self, digit: object) -> None:
        """A key the caller pressed: a system note of the call (at most AGENT_MAX_DTMF_PER_CALL)."""
        self.touch()
        if not isinstance(digit, str) or digit not in DTMF_DIGITS:
            return await self.refuse(codes.INVALID_FRAME, "A dtmf frame carries one digit of 0-9, *, #, A-D.")
        if self.dtmf_count >= settings.AGENT_MAX_DTMF_PER_CALL:
            return await self.refuse(codes.TOO_MANY_DTMF, f"At most {settings.AGENT_MAX_DTMF_PER_CALL} DTMF keys "
                                     "per session.")
        self.dtmf_count += 1
        await self._note(SYSTEM, f"DTMF {digit}")

    async def end(self, close_code: int = CLOSE_NORMAL) -> None:
        """Books the call at once (the far end may never confirm the close) and closes."""
        if self.closing:
            return
        self.closing = True
        await self.book()
        await self.transport.close(close_code)

    async def refuse(self, code: str, message: str) -> None:
        """An error event with `code` (agent_app.codes), then the end (booked) with the
        code's close."""
        await self.send_event({"type": "error", "code": code, "message": message})
        await self.end(codes.CLOSES[code])

    async def stop(self) -> None:
        """The connection is gone (the caller hung up, a drop): the tasks stop and the
        call is booked."""
        self.closing = True
        self.stop_tasks()
        await self.book()

    def stop_tasks(self) -> None:
        for task in [*self.tasks, self.speech_task, self.realtime_task]:
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        self.hearing.close()

    async def book(self) -> None:
        """Ends the call and books it: the one booking path of every end. call_web_end
        books once, so a second call changes nothing. The lines and measurements still
        being written go in first. A call being handed over is booked as handed over
        (its note, its seconds up to now), whoever books it first."""
        if self.booked:
            return
        if self.writes:
            for result in await asyncio.gather(*self.writes, return_exceptions=True):
                if isinstance(result, Exception):
                    logger.warning("Voice agent session %s: a write of the call failed (%r)",
                                   self.context.session_id, result)
        if self.transfer_target:
            await _hand_over(call_id=self.call_id, target=self.transfer_target, label=self.transfer_label)
        else:
            await _end_call(call_id=self.call_id)
        self.booked = True

    async def transfer_to(self, target: str, *, label: str = "", warm: bool = False) -> bool:
        """Hands the call over to a person at `target` (E.164): the carrier is told first
        (a refusal, or a transport without a phone line, leaves the conversation going
        on: returns False), then the call is booked with the note "Weitergeleitet an
        `label` or `target`" and its seconds up to now, and the connection closes.
        `warm`: the person answered a warm hand-over's ring; the caller joins them."""
        if self.closing or self.transfer_target or not self.transport.can_transfer:
            return False
        self.transfer_target, self.transfer_label = target, label
        try:
            if warm:
                await self.transport.transfer(target, warm=True)
            else:
                await self.transport.transfer(target)
        except Exception:
            logger.warning("Call %s could not be handed over", self.call_id, exc_info=True)
            self.transfer_target = None
            return False
        self.closing = True
        self.stop_tasks()
        await self.book()
        await self.transport.close(CLOSE_NORMAL)
        return True

    async def fail(self, exc: BaseException, where: str) -> None:
        """The conversation cannot go on after `exc`: an error event if the caller can
        still get one, the call booked through the one path, and a 4500 close."""
        if isinstance(exc, OSError):  # e.g. uvicorn's ClientDisconnected: the client is gone
            logger.info("Voice agent session %s: the connection went away in %s (%r)", self.context.session_id,
                        where, exc)
        else:
            logger.error("Voice agent session %s failed in %s", self.context.session_id, where, exc_info=exc)
        try:
            if not self.closing:
                code = exc.code if isinstance(exc, ApiError) else codes.AGENT_FAILED
                await self.send_event({"type": "error", "code": code,
                                       "message": "The agent could not go on with the conversation."})
        except Exception as send_failed:  # the caller cannot be told; the call is still booked
            logger.info("Voice agent session %s: no error event (%r)", self.context.session_id, send_failed)
        finally:
            self.closing = True
            self.stop_tasks()
            try:
                await self.book()
            finally:
                await self.transport.close(CLOSE_FAILED)

    # --- the conversation -----------------------------------------------------------
    async def _listen(self) -> None:
        """The assistant's streaming recogniser (its `transcriber`) hears the caller from
        now on; one that cannot be called leaves it to the local engines, with a note."""
        assistant = self.mind.assistant if self.mind is not None else None
        transcriber = (assistant.transcriber if assistant is not None else None) or {}
        # The vocabulary is the provider's keyterms and the local recogniser's prompt alike.
        self.hearing.keyterms = [str(term) for term in transcriber.get("keyterms") or []]
        if not transcriber.get("lane"):
            return
        try:
            engine = await _transcriber(transcriber["lane"])
        except LaneFailure as failure:
            self._write(self._note(SYSTEM, conversation.lane_note("stt", transcriber["lane"], failure)))
            return
        self.hearing.listen_with(Ears(engine, audio=conversation.call_audio(self.wire), language=self.language,
                                      keyterms=self.hearing.keyterms, loop=self.loop, spend=self.spend,
                                      on_event=self.hearing.heard, on_failure=self.hearing.lost))

    async def _turns(self) -> None:
        """The opening, then each utterance in turn: hear, think, speak."""
        self.mind = await _new_mind(self.context)
        await self._assistants_limits(self.mind.assistant)
        if self.context.resumed is not None:
            await self._resume(self.context.resumed)
        else:
            await self._open()
        while True:
            self._callers_turn()
            utterance = await self.utterances.get()
            self.idle_since = None
            await self._answer(utterance)

    async def _open(self) -> None:
        """The opening (the disclosure first), while hearing and a realtime session get ready."""
        assert self.mind is not None
        opening = await _opening(tenant=self.context.tenant, variables=self.context.variables,
                                 assistant=self.mind.assistant, recorded=self.context.recorded)
        realtime = self._realtime(opening.text)  # connects while the opening is spoken
        if realtime is None:
            await self._listen()
        ready = asyncio.create_task(_get_ready(language=self.language))
        try:
            await self._say(opening.text, disclosure=opening.disclosure, opening=True)
            self._callers_turn()  # while the recogniser may still be loading
            if realtime is not None:
                await realtime  # the realtime conversation, until its lane fails: then the pipeline's
                self.realtime = None
                await self._listen()
            await ready
        finally:
            ready.cancel()  # a no-op once it finished

    async def _resume(self, resumed: Resumed) -> None:
        """The call came back after an Asterisk dialplan's warm hand-over nobody answered:
        no opening (the disclosure was given), the pipeline hears the caller, and the
        assistant, given the call's transcript so far and transfer_call's answer as on
        Twilio and SIP, tells the caller and offers the callback."""
        assert self.mind is not None
        await self._listen()
        result = {"ok": False, "tool": "transfer_call", "error": tool_codes.TRANSFER_NOT_ANSWERED,
                  "message": resumed.message}
        reply = await _resumed_reply(self.mind, history=resumed.history, tool="transfer_call", result=result)
        if reply.text:
            await self._say(reply.text)

    def _realtime(self, opening: str) -> "asyncio.Task[None] | None":
        """An assistant in realtime mode: the task of its session (agent_app.realtime),
        which connects now and runs until the lane fails; None in pipeline mode."""
        assistant = self.mind.assistant if self.mind is not None else None
        lane = (assistant.realtime or {}).get("lane") if assistant is not None and assistant.mode == REALTIME else None
        if not lane:
            return None
        from agent_app.realtime import RealtimeBridge  # it builds on this module

        bridge = self.realtime = RealtimeBridge(self, lane)

        async def converse() -> None:
            if await bridge.connect(opening=opening):
                await bridge.run()

        self.realtime_task = asyncio.create_task(converse())  # stopped with the conversation
        return self.realtime_task

    async def _assistants_limits(self, assistant: Assistant | None) -> None:
        """The assistant's `maxDurationSec` (below the grant: the call's cap, booked so)
        and `silenceTimeoutSec` apply from now; the watchdog is woken to see them."""
        if assistant is None:
            return
        cap = assistant.max_duration_sec
        if cap and (not self.max_seconds or cap < self.max_seconds):
            self.max_seconds, self.capped = cap, True
            await _cap_seconds(call_id=self.call_id, max_seconds=cap)
        self.silence_sec = assistant.silence_timeout_sec
        self.went_idle.set()

    def _callers_turn(self) -> None:
        """The agent spoke and has nothing to answer: the caller's silence counts from
        now (kept if it already counts)."""
        if self.idle_since is None and self.utterances.empty():
            self.idle_since = self.loop.time()
            self.went_idle.set()

    async def _answer(self, turn: Turn) -> None:
        try:
            text = await turn.transcript
        except ApiError as exc:  # e.g. stt_busy: this utterance is lost, the call goes on
            return await self.send_event({"type": "error", "code": exc.code, "message": exc.message})
        heard_at = self.loop.time()
        if not text:
            return  # noise, a cough: nothing was said
        utterance = turn.utterance
        await self.send_event({"type": "transcript.final", "text": text, "start": utterance.start,
                               "end": utterance.end})
        self._write(self._note(USER, text))
        timing = TurnTiming(spoken_end=turn.spoken_end_at, decided=turn.decided_at, heard=heard_at)
        # The reply is spoken while the model streams it: its sentences as they come.
        lines = Lines(self.loop)
        assert self.mind is not None  # made by _turns before the first utterance is answered
        thinking = asyncio.create_task(_think(self.mind, text, say=lines.add))
        thinking.add_done_callback(lambda _: lines.close())
        try:
            # No dead air: a model or a tool that has said nothing soon gets a filler.
            if not await lines.started(settings.AGENT_FILLER_AFTER_SEC) and not thinking.done():
                await self._say(filler(self.language))
            if await lines.started():
                await self._speak(lines, timing=timing)
            reply = await thinking
        finally:
            lines.stop()
            thinking.cancel()  # a no-op once it finished; the worker thread ends by its deadline
        for note in reply.notes:
            self._write(self._note(SYSTEM, note))
            await self.send_event({"type": "agent.note", "text": note})  # a tool call, as the transcript notes it
        if reply.action == "transfer" and reply.target is not None:
            await self.transfer(reply.target)
        elif reply.action == "end_call" or self._said_an_end_phrase(reply.text):
            await self.end(CLOSE_NORMAL)

    def _said_an_end_phrase(self, text: str) -> bool:
        """The reply, spoken in full (not interrupted), says one of the assistant's
        `endCallPhrases`: the call ends after it."""
        assistant = self.mind.assistant if self.mind is not None else None
        spoken = self.speech_task is not None and self.speech_task.done() and not self.speech_task.cancelled()
        return bool(assistant is not None and text and spoken and ends_the_call(text, assistant.end_call_phrases))

    async def transfer(self, target: dict[str, str]) -> None:
        """The assistant hands the call to a person at `target` ({"name", "e164"}, one of
        its transfer targets, checked by calls_app): a phone transport hands the call over
        (transfer_to: the carrier first, then the call booked with the note "Weitergeleitet
        an …"; if the carrier refuses, the caller is told and the conversation goes on);
        the browser has no phone line, so its conversation ends there with the note. A
        warm hand-over's person answered and heard the summary: the note says so."""
        warm = target.get("mode") == "warm"
        label = f"{target['name']} ({target['e164']})" + (WARM_NOTE if warm else "")
        if self.transport.can_transfer:
            if not await self.transfer_to(target["e164"], label=label, warm=warm):
                await self._say(TRANSFER_FAILED.get(self.language, TRANSFER_FAILED["de"]))
            return
        await self._note(SYSTEM, f"Weitergeleitet an {label}")
        await self.end(CLOSE_NORMAL)

    async def _say(self, text: str, *, disclosure: str = "", opening: bool = False) -> None:
        """`text` as agent.speaking, audio, agent.done. The disclosure (the start of the
        opening) is spoken in full before barge-in can stop the agent. The opening's
        audio comes from the process's cache of openings."""
        # The disclosure is synthesised on its own, so that where its audio ends is exact.
        parts = [disclosure, text[len(disclosure):].strip()] if disclosure and text.startswith(disclosure) else [text]
        await self._speak(Lines.of(self.loop, parts), whole=text, disclosure=len(parts) == 2, opening=opening)

    async def _speak(self, lines: Lines, *, whole: str | None = None, disclosure: bool = False, opening: bool = False,
                     timing: TurnTiming | None = None) -> None:
        """Speaks `lines` as they come; a barge-in stops it (once the disclosure was
        heard) and the turns go on."""
        self.barge_in_allowed = not disclosure
        self.speech_task = task = asyncio.create_task(
            self._stream(lines, whole=whole, disclosure=disclosure, opening=opening, timing=timing))
        await asyncio.wait([task])  # a barge-in cancels it, the turns go on
        if not task.cancelled() and (failure := task.exception()) is not None:
            raise failure  # a failure while speaking ends the conversation (_guarded)

    async def _stream(self, lines: Lines, *, whole: str | None, disclosure: bool, opening: bool,
                      timing: TurnTiming | None) -> None:
        """Sends the audio of `lines` as it is synthesised, sentence by sentence, paced to
        real time (at most AGENT_SPEECH_LEAD_SEC ahead). Right before a sentence's first
        audio, agent.speaking names the sentences ready by then (`whole` instead, for a
        text known at once): a reply the model still streams may take several. The
        transcript gets one line for it all, when it ends (or is interrupted)."""
        audio: asyncio.Queue[SpeechItem] = asyncio.Queue()
        producer = asyncio.ensure_future(synthesise(lines, audio, opening=opening, language=self.language,
                                                    voice=self.context.voice, wire=self.wire, spend=self.spend))
        chunk = int(self.wire.bytes_per_second * SPEECH_CHUNK_SEC) & ~1
        began: float | None = None
        lead, sent, announced = settings.AGENT_SPEECH_LEAD_SEC, 0, 0
        said: list[tuple[datetime, str]] = []  # (time, text) of each agent.speaking: one transcript line for the whole
        try:
            part: int | None = None  # the part whose audio is going out
            while (item := await audio.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                if isinstance(item, str):  # a speech lane failed, the local engines took over
                    self._write(self._note(SYSTEM, item))
                    continue
                index, pcm = item
                if index != part:
                    if part is not None:  # the previous part was handed over in full
                        if disclosure and part == 0 and not self.barge_in_allowed:
                            await self._disclosure_heard()
                        await self.transport.speech_sent()
                    part = index
                if part >= announced:
                    announced = await self._announce(lines, announced, whole, said)
                for offset in range(0, len(pcm), chunk):
                    piece = pcm[offset:offset + chunk]
                    await self.transport.send_audio(piece)
                    if began is None:
                        began = self.loop.time()
                        if timing is not None:
                            await self._measured(timing, thought=lines.first_at or began, first_audio=began)
                    sent += len(piece)
                    ahead = began + sent / self.wire.bytes_per_second - lead - self.loop.time()
                    if ahead > 0:
                        await asyncio.sleep(ahead)  # real-time pacing of the agent's voice
            if lines.since(announced):  # parts that made no audio were still said
                await self._announce(lines, announced, whole, said)
            if disclosure and not self.barge_in_allowed:
                await self._disclosure_heard()
            await self.transport.speech_sent()
        except asyncio.CancelledError:
            if not self.closing:
                await self.send_event({"type": "agent.interrupted"})
                self._write(self._note(SYSTEM, INTERRUPTED))
            raise
        finally:
            lines.stop()  # the synthesis stops after its current sentence
            if not producer.done():
                producer.cancel()
            if said:  # what the agent said (or began to say), at the time it began
                self._write(_line(call_id=self.call_id, role=ASSISTANT, text=" ".join(text for _, text in said),
                                  ts=said[0][0]))
        await self.send_event({"type": "agent.done"})

    async def _announce(self, lines: Lines, announced: int, whole: str | None,
                        said: list[tuple[datetime, str]]) -> int:
        """agent.speaking for the parts from `announced` on (noted in `said`); returns
        how many parts are announced now."""
        parts = lines.since(announced)
        text = whole if whole is not None else " ".join(parts)
        said.append((timezone.now(), text))
        await self.send_event({"type": "agent.speaking", "text": text})
        return announced + len(parts)

    async def _disclosure_heard(self) -> None:
        await _disclosed(call_id=self.call_id, recording_announced=self.context.recorded)
        self.barge_in_allowed = True

    async def _measured(self, timing: TurnTiming, *, thought: float, first_audio: float) -> None:
        """The reply's first audio went out: its latency as an event and with the call."""
        stages = timing.stages(thought=thought, first_audio=first_audio)
        await self.send_event({"type": "turn.latency", **{f"{name}Ms": value for name, value in stages.items()}})
        self._write(_turn_latency(call_id=self.call_id, **{STAGE_COLUMNS[name]: value
                                                              for name, value in stages.items()}))

    async def _barge_in(self) -> None:
        task = self.speech_task
        if task is not None and not task.done() and self.barge_in_allowed:
            task.cancel()
            await self.transport.clear_audio()

    async def _watchdog(self) -> None:
        """Ends the conversation at the end of its grant or of the assistant's
        `maxDurationSec` (a goodbye first where the transport has a lead for it, and
        always for the assistant's cap); after the assistant's `silenceTimeoutSec` of
        the caller's silence once a polite check, twice the end; and after
        AGENT_IDLE_TIMEOUT_SEC without any frame since the agent finished its turn (its
        speech, hearing and thinking do not count; a connection that hangs)."""
        timeout = settings.AGENT_IDLE_TIMEOUT_SEC
        while True:
            now = self.loop.time()
            lead = CAP_GOODBYE_LEAD_SEC if self.capped else self.transport.goodbye_lead_sec
            grant_end = self.started + self.max_seconds - lead
            if now >= grant_end:
                if lead:
                    await self._goodbye()
                if self.capped:
                    return await self.end(CLOSE_NORMAL)
                return await self.refuse(codes.GRANT_ENDED, "The minutes granted to this session are used up.")
            wake = grant_end
            if self.idle_since is not None:
                idle_end = max(self.last_frame, self.idle_since) + timeout
                if now >= idle_end:
                    return await self.refuse(codes.IDLE_TIMEOUT, f"No frame arrived for {timeout} s after the "
                                             "agent's turn.")
                wake = min(wake, idle_end)
                if self.silence_sec:
                    silence_end = max(self.last_speech, self.idle_since) + self.silence_sec
                    if now >= silence_end:
                        if await self._silence():
                            return None
                        continue
                    wake = min(wake, silence_end)
            # Until then, or until the agent's next turn ends (when the silence starts).
            self.went_idle.clear()
            try:
                await asyncio.wait_for(self.went_idle.wait(), wake - now)
            except TimeoutError:
                pass

    async def _silence(self) -> bool:
        """The caller was silent for the assistant's `silenceTimeoutSec` after the
        agent's turn: the first time a polite check (the silence counts anew after it),
        the second time a goodbye and the end. Returns whether the call ended."""
        texts = SILENCE_END if self.silence_checked else SILENCE_CHECK
        await self._say(texts.get(self.language, texts["de"]))
        if self.silence_checked:
            await self.end(CLOSE_NORMAL)
            return True
        self.silence_checked = True
        self.idle_since = None
        self._callers_turn()
        return False

    async def _goodbye(self) -> None:
        """The grant's end on the phone: the turns stop, and the agent says GOODBYE in
        full (no barge-in) before the call is hung up."""
        for task in [self.tasks[0] if self.tasks else None, self.speech_task, self.realtime_task]:
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        await self.transport.clear_audio()
        audio = await _speak_whole(GOODBYE, language=self.language, voice=self.context.voice, wire=self.wire,
                                   spend=self.spend)
        await self.send_event({"type": "agent.speaking", "text": GOODBYE})
        await self._note(ASSISTANT, GOODBYE)
        chunk = int(self.wire.bytes_per_second * SPEECH_CHUNK_SEC) & ~1
        began = self.loop.time()
        for offset in range(0, len(audio), chunk):
            await self.transport.send_audio(audio[offset:offset + chunk])
            ahead = began + min(offset + chunk, len(audio)) / self.wire.bytes_per_second - self.loop.time()
            if ahead > 0:
                await asyncio.sleep(ahead)  # real time: the caller hears it out before the hang-up
        await self.transport.speech_sent()

    async def _heartbeats(self) -> None:
        """Says every CALL_HEARTBEAT_SEC that this process still holds the call: if it
        dies, the sweep books the call up to the last heartbeat (calls_app's
        calls_orphaned_end). A call ended meanwhile (taken for orphaned) ends the
        conversation."""
        while True:
            await asyncio.sleep(settings.CALL_HEARTBEAT_SEC)
            try:
                live = await _heartbeat(call_id=self.call_id)
            except Exception:  # the database is away for a moment: the next beat may reach it
                logger.warning("Heartbeat of call %s failed", self.call_id, exc_info=True)
                continue
            if not live:
                return await self.refuse(codes.AGENT_FAILED, "The call was ended by the server.")

    async def _guarded(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """One of the conversation's tasks; its failure ends the conversation (fail)."""
        try:
            await coroutine
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self.fail(exc, "a task")

    # --- helpers --------------------------------------------------------------------
    def _note(self, role: str, text: str, *, ts: datetime | None = None) -> Awaitable[None]:
        """A transcript line, timed now or at `ts` (written whenever its thread gets to it)."""
        return _line(call_id=self.call_id, role=role, text=text, ts=ts or timezone.now())

    def _write(self, coroutine: Awaitable[Any]) -> None:
        """A write the conversation does not wait for; book() does."""
        task = asyncio.ensure_future(coroutine)
        self.writes.add(task)
        task.add_done_callback(self.writes.discard)

    async def send_event(self, event: dict[str, Any]) -> None:
        if not self.closing:
            await self.transport.send_event(event)
