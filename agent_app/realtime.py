"""An assistant in `realtime` mode: the conversation core bridges the call's audio to a
voice-agent lane's session (speech to speech, speech_app.voice_agent; OpenAI Realtime),
which hears, decides the turns, thinks and speaks. What stays ours:

- the Art. 50 disclosure (with the recording notice) and the greeting are spoken by the
  conversation itself first; the caller's audio reaches the session only once the
  disclosure was heard, and the model's audio goes out only from then on;
- the agent's audio goes out paced to real time (as the pipeline's), so a barge-in (the
  session's `speech_started`) stops it: `response.cancel` at the provider, our queued
  audio dropped, the carrier's buffer cleared, `agent.interrupted` and the note;
- the model's tool calls run through the mind's one tool path (tools_app.tool_run: the
  assistant's tools only, a transfer only to its transfer targets, results sent back as
  data), then the model answers again; a transfer or an end follows what it said;
- both sides' transcripts go into the call's transcript, each line at the time it
  began (the caller's when it started speaking, the agent's at its first audio);
- the session's minutes are counted in the lane's usage.

A lane that cannot be called or fails mid-call leaves the call to the pipeline (hear →
think → speak with the assistant's engines) with a system note: `run` returns.
"""
import asyncio
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime

import numpy
from django.conf import settings
from django.utils import timezone

from agent_app.audio import resample
from agent_app.conversation import call_audio
from agent_app.mind import Mind, ToolOutcome
from agent_app.session import ASSISTANT, INTERRUPTED, SPEECH_CHUNK_SEC, SYSTEM, USER, Conversation
from agent_app.threads import off_loop
from registry_app.lanes.failover import LaneFailure
from speech_app.services import streaming_recognition_done, voice_agent_for
from speech_app.streaming import CallAudio
from speech_app.voice_agent import (
    AgentAudio,
    AgentText,
    AgentToolCall,
    CallerStarted,
    CallerText,
    ResponseDone,
    VoiceAgentSession,
)

logger = logging.getLogger("agent_app")

PCM_RATE = 24000  # the realtime protocol's PCM
# What the session is told beside the assistant's instructions: the opening is ours.
OPENING_SAID = ("Zu Beginn des Gesprächs wurde dem Anrufer bereits gesagt: «{text}» Begrüßen Sie ihn nicht noch "
                "einmal; antworten Sie auf das, was er sagt.")

_voice_agent = off_loop(voice_agent_for)
_usage = off_loop(streaming_recognition_done)


def _tool(mind: Mind, name: str, arguments: str) -> ToolOutcome:
    return mind.tool(name, arguments)


_run_tool = off_loop(_tool)


@dataclass
class _Response:
    """One response of the agent as it is played."""

    pieces: list[str] = field(default_factory=list)
    text: str = ""  # the whole transcript once the provider gave it
    began: datetime | None = None  # its first audio went out
    interrupted: bool = False

    @property
    def said(self) -> str:
        return (self.text or "".join(self.pieces)).strip()


@dataclass(frozen=True)
class _End:
    response: _Response


class RealtimeBridge:
    def __init__(self, conversation: Conversation, lane_id: str) -> None:
        self.conversation, self.lane_id = conversation, lane_id
        wire = conversation.wire
        # A-law/μ-law from a phone line as it came; PCM (the browser's, AudioSocket's) at the protocol's rate.
        self.audio = call_audio(wire) if wire.encoding in ("alaw", "mulaw") else CallAudio("linear16", PCM_RATE)
        self.session: VoiceAgentSession | None = None
        self.failure: LaneFailure | None = None
        self.queue: asyncio.Queue[tuple[_Response, bytes] | _End] = asyncio.Queue()
        self.response = _Response()  # the response being received
        self.playing: _Response | None = None  # the response whose audio goes out
        self.heard_from: datetime | None = None  # when the caller's current utterance began
        self.calls: list[AgentToolCall] = []
        self.opened_at = conversation.loop.time()
        self._carry = b""

    # --- the session ------------------------------------------------------------------
    async def connect(self, *, opening: str) -> bool:
        """Opens the lane's session (while the opening is spoken); False, with a note,
        when it cannot be called: the pipeline answers."""
        mind = self.conversation.mind
        assert mind is not None
        try:
            agent = await _voice_agent(self.lane_id)
            self.session = await agent.open(
                audio=self.audio, instructions=f"{mind.instructions}\n{OPENING_SAID.format(text=opening)}",
                tools=mind.tools, language=self.conversation.language)
        except LaneFailure as failure:
            self.failure = failure
            await self._note(f"Realtime lane {self.lane_id} cannot be called ({failure.outcome}): the pipeline "
                             "answers.")
            self._count(0.0, failure)
            return False
        self.opened_at = self.conversation.loop.time()
        return True

    async def hear(self, data: bytes) -> None:
        """The caller's audio (the wire's): to the session once the disclosure was heard."""
        session = self.session
        if session is None or self.failure is not None or not self.conversation.barge_in_allowed:
            return
        try:
            await session.send_audio(self._to_provider(data))
        except LaneFailure as failure:
            self.failure = failure
            await session.close()  # the reader sees the end and hands over to the pipeline

    async def run(self) -> None:
        """The session's events until the call ends (cancelled) or the lane fails (then
        a note, and it returns: the pipeline answers from here)."""
        session = self.session
        assert session is not None
        player = asyncio.create_task(self._play())
        failure: LaneFailure | None = None
        try:
            while True:
                await self._on(await session.next_event())
        except LaneFailure as lost:
            failure = self.failure = self.failure or lost
            player.cancel()
            await self._drop()
            if self.playing is not None and not self.playing.interrupted:  # cut off: what was said of it
                self._said(self.playing)
                await self.conversation.send_event({"type": "agent.done"})
            await self._note(f"Realtime lane {self.lane_id} failed ({failure.outcome}): the pipeline answers.")
        finally:
            player.cancel()
            self.conversation._write(session.close())
            self._count(self.conversation.loop.time() - self.opened_at, failure)

    # --- events -----------------------------------------------------------------------
    async def _on(self, event: object) -> None:
        conversation = self.conversation
        if isinstance(event, AgentAudio):
            # Never before the disclosure was heard; nothing more of a response the caller interrupted.
            if conversation.barge_in_allowed and not self.response.interrupted:
                self.queue.put_nowait((self.response, self._to_wire(event.data)))
        elif isinstance(event, AgentText):
            if event.final:
                self.response.text = event.text
            else:
                self.response.pieces.append(event.text)
        elif isinstance(event, CallerStarted):
            await self._barge_in()
        elif isinstance(event, CallerText):
            await self._heard(event.text)
        elif isinstance(event, AgentToolCall):
            self.calls.append(event)
        elif isinstance(event, ResponseDone):
            await self._response_done()

    async def _heard(self, text: str) -> None:
        conversation = self.conversation
        began = self.heard_from or timezone.now()
        self.heard_from = None
        if not text:
            return
        end = conversation.loop.time() - conversation.started
        await conversation.send_event({"type": "transcript.final", "text": text,
                                       "start": round(max(0.0, end - (timezone.now() - began).total_seconds()), 3),
                                       "end": round(end, 3)})
        conversation._write(conversation._note(USER, text, ts=began))

    async def _barge_in(self) -> None:
        """The caller started speaking: our own speech stops (once the disclosure was
        heard), and so does the agent's response, at the provider and on the wire."""
        conversation = self.conversation
        conversation.last_speech, conversation.idle_since = conversation.loop.time(), None
        conversation.silence_checked = False
        self.heard_from = timezone.now()
        await conversation._barge_in()
        session = self.session
        cancelled = session is not None and session.responding
        if session is not None:
            await session.cancel()  # the response under way, if one is
        # What stops: the response being played (its end may have come already) and the
        # one being received (its late audio is dropped until its end comes).
        stopped = [response for response in {id(r): r for r in (self.playing, self.response) if r}.values()
                   if not response.interrupted and (response.began is not None or
                                                    (response is self.response and cancelled))]
        heard = [response for response in stopped if response.began is not None]
        for response in stopped:
            response.interrupted = True
        if heard or not self.queue.empty():
            await self._drop()
            await conversation.transport.clear_audio()
            await conversation.send_event({"type": "agent.interrupted"})
            conversation._write(conversation._note(SYSTEM, INTERRUPTED))
            for response in heard:
                self._said(response)

    async def _response_done(self) -> None:
        """A response ended: its tool calls run (then the model answers again), or it is
        played out to its end."""
        calls, self.calls = self.calls, []
        response, self.response = self.response, _Response()
        self.queue.put_nowait(_End(response))
        if not calls:
            return
        conversation, session = self.conversation, self.session
        assert conversation.mind is not None and session is not None
        action: ToolOutcome | None = None
        for call in calls:
            outcome = await _run_tool(conversation.mind, call.name, call.arguments)
            conversation._write(conversation._note(SYSTEM, outcome.note))
            await conversation.send_event({"type": "agent.note", "text": outcome.note})
            await session.tool_result(call.call_id, _data(outcome.result))
            action = action if action is not None and action.action == "transfer" else (
                outcome if outcome.action else action)
        if action is None:
            await session.respond()
            return
        await self.queue.join()  # what the agent said before the tool is heard out
        if action.action == "transfer" and action.target is not None:
            await conversation.transfer(action.target)
        else:
            await conversation.end()

    # --- the agent's audio on the wire --------------------------------------------------
    async def _play(self) -> None:
        """Sends the agent's audio paced to real time (at most AGENT_SPEECH_LEAD_SEC
        ahead), agent.speaking at a response's first audio, agent.done and its transcript
        line at its end."""
        conversation = self.conversation
        wire, loop = conversation.wire, conversation.loop
        chunk = int(wire.bytes_per_second * SPEECH_CHUNK_SEC) & ~1
        began, sent = 0.0, 0
        while True:
            item = await self.queue.get()
            try:
                if isinstance(item, _End):
                    if self.playing is item.response:
                        self.playing = None
                    if not item.response.interrupted and item.response.began is not None:
                        await conversation.transport.speech_sent()
                        await conversation.send_event({"type": "agent.done"})
                        self._said(item.response)
                    conversation._callers_turn()
                    continue
                response, audio = item
                if response.interrupted:
                    continue
                if response.began is None:
                    self.playing = response
                    response.began, began, sent = timezone.now(), loop.time(), 0
                    conversation.idle_since = None
                    await conversation.send_event({"type": "agent.speaking", "text": response.said})
                for offset in range(0, len(audio), chunk):
                    if response.interrupted:
                        break
                    await conversation.transport.send_audio(audio[offset:offset + chunk])
                    sent += min(chunk, len(audio) - offset)
                    ahead = began + sent / wire.bytes_per_second - settings.AGENT_SPEECH_LEAD_SEC - loop.time()
                    if ahead > 0:
                        await asyncio.sleep(ahead)  # real-time pacing of the agent's voice
            finally:
                self.queue.task_done()

    async def _drop(self) -> None:
        """Drops the agent's audio not yet sent."""
        while not self.queue.empty():
            self.queue.get_nowait()
            self.queue.task_done()

    def _said(self, response: _Response) -> None:
        if response.said and response.began is not None:
            self.conversation._write(self.conversation._note(ASSISTANT, response.said, ts=response.began))

    # --- helpers ----------------------------------------------------------------------
    def _to_provider(self, data: bytes) -> bytes:
        wire = self.conversation.wire
        if self.audio.encoding != "linear16":
            return data  # A-law/μ-law as it came from the carrier
        return resample(wire.samples(data), wire.sample_rate, PCM_RATE).astype("<i2").tobytes()

    def _to_wire(self, data: bytes) -> bytes:
        if self.audio.encoding != "linear16":
            return data  # the carrier's own encoding, unconverted
        data, self._carry = self._carry + data, b""
        if len(data) % 2:
            data, self._carry = data[:-1], data[-1:]
        return self.conversation.wire.from_pcm(numpy.frombuffer(data, dtype="<i2").tobytes(), PCM_RATE)

    async def _note(self, text: str) -> None:
        logger.warning("Call %s: %s", self.conversation.call_id, text)
        self.conversation._write(self.conversation._note(SYSTEM, text))

    def _count(self, seconds: float, failure: LaneFailure | None = None) -> None:
        self.conversation._write(_usage(self.lane_id, audio_seconds=max(0.0, seconds), failure=failure))


def _data(result: dict[str, object]) -> str:
    return json.dumps(result, ensure_ascii=False, default=str)
