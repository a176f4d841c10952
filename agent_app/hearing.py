"""Hearing the caller: where a turn ends, what was said, and what is being said.

The caller's audio goes through the Endpointer (agent_app.audio, WebRTC's voice
activity detector). Waiting for half a second of silence and only then recognising
the utterance cost the caller 0.5 s + the recognition before the agent could even
think; instead:

- **recognition starts at the first pause** (150 ms of silence), while the end of the
  turn is still being decided, on the audio so far; when no more speech comes, that
  result is the turn's, else it is dropped and the utterance is heard again;
- **the end-of-turn model** (Smart Turn, speech_app.smart_turn) is asked at the
  pause's checkpoint (150 ms): when it says the caller finished, the turn ends at once;
  when it does not (a caller pausing mid-sentence), the agent waits up to
  `LONG_HANGOVER` before taking the turn. Without the model (not installed) a turn
  ends after the fixed pause of `Endpointer.HANGOVER`;
- **partial transcripts** (`transcript.partial`) while the caller speaks, about once a
  second, when a recognition engine is idle (a draft never delays a turn's
  recognition).

With a **streaming recogniser** (an assistant's `transcriber`, agent_app.listening) the
provider hears the caller's audio as it comes (in the wire's own encoding): its interim
results are the partial transcripts, its final results the turn's transcript, ready
when the turn ends (a `Finalize` asks for what it still holds); no speculation and no
drafts run locally. Who ends the turn (docs/architecture.md, "Who ends a turn"): Smart
Turn's *complete* at once; the provider's end of speech (`speech_final`, `EndOfSpeech`)
during a pause unless Smart Turn said *incomplete* for that pause; else the hangover.
When the provider fails, the turn's audio (kept as ever) is recognised locally and a
note says so; the rest of the call is heard locally.

Nothing here blocks the event loop: the model and the recogniser run in worker
threads; the loop only keeps the state."""
import asyncio
import concurrent.futures
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from agent_app import conversation
from agent_app.audio import Endpointer, Pause, Utterance
from agent_app.listening import Ears
from agent_app.threads import in_pool
from registry_app.lanes.failover import LaneFailure
from speech_app.smart_turn import COMPLETE, smart_turn
from speech_app.streaming import EndOfSpeech, Event, Heard

logger = logging.getLogger("agent_app")
T = TypeVar("T")

# Frames of silence (30 ms each) after which a turn ends when the end-of-turn model did
# not say it was complete: ~1 s, twice the fixed pause, for a caller who stops mid-sentence.
LONG_HANGOVER = 34
# Seconds a turn's end waits for the streaming recogniser's final result after Finalize
# (Deepgram answers within a few hundred ms); past it the turn's audio is heard by the
# next lane, so that a provider gone silent keeps the caller's dead air within ~1.5 s.
FINAL_WAIT_SEC = 0.5
# Seconds before our own pause within which the provider's end of speech still ends the
# turn at that pause (its endpointing may hear the silence a few frames before our
# voice activity detector does).
PROVIDER_LEAD_SEC = 0.5
# Seconds of speech between two partial transcripts.
PARTIAL_EVERY_SEC = 1.0
# The end-of-turn model's own threads (one inference each): never queued behind recognition.
_TURN_MODEL_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="smart-turn")
# Threads that wait for a recognition engine (the engines themselves are speech_app's).
_WAITING = concurrent.futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="agent-hearing")
_hear = in_pool(_WAITING, conversation.hear)
_draft = in_pool(_WAITING, conversation.draft)


@dataclass
class Turn:
    """One utterance of the caller whose end was decided, and its recognition under way."""

    utterance: Utterance
    transcript: asyncio.Future[str]  # the text heard; raises ApiError (e.g. stt_busy)
    spoken_end_at: float  # loop time when the caller's last speech arrived
    decided_at: float  # loop time when the turn was taken as ended
    speculative: bool  # recognised from the audio at the pause, before the end was decided


class Hearing:
    """The caller's side of one conversation. `on_turn(Turn)` is called (on the loop) for
    each utterance whose end was decided; `on_partial(text, start)` (a coroutine
    function) for each partial transcript."""

    def __init__(self, *, language: str, loop: asyncio.AbstractEventLoop, on_turn: Callable[[Turn], None],
                 on_partial: Callable[[str, float], Awaitable[None]],
                 on_note: Callable[[str], None] | None = None) -> None:
        self.endpointer = Endpointer()
        self.language = language
        self.loop = loop
        self.on_turn, self.on_partial = on_turn, on_partial
        self.utterance_no = 0  # a partial of an earlier utterance is dropped
        self.pause_no = 0  # a model's answer or a speculation of an earlier pause is dropped
        self.speculation: tuple[int, asyncio.Future[str]] | None = None  # (pause_no, task) of the pause under way
        self.partial_task: asyncio.Future[None] | None = None
        self.partial_at = 0.0  # seconds of the utterance at the last partial
        self.last_voice_at = loop.time()
        self.tasks: set[asyncio.Future[Any]] = set()
        self.asking: set[asyncio.Future[None]] = set()  # the end-of-turn model's answers under way
        self.on_note = on_note
        # The streaming recogniser, when the assistant names one (None: the local engines).
        self.ears: Ears | None = None
        self.finals: list[str] = []  # its final results of the turn so far
        self.interim_pending = False  # it showed words it has not made final yet
        self.final_arrived = asyncio.Event()
        self.incomplete_pause = 0  # the pause for which Smart Turn said "incomplete"
        self.provider_ended_at: float | None = None  # loop time of its end of speech heard while we heard speech
        # The assistant's vocabulary (its transcriber's keyterms): the provider's and Whisper's hint.
        self.keyterms: list[str] = []

    # --- a streaming recogniser ------------------------------------------------------------
    def listen_with(self, ears: Ears) -> None:
        """From now on the provider behind `ears` hears the caller (its events come to this loop)."""
        self.ears = ears
        ears.start()

    @property
    def streaming(self) -> bool:
        return self.ears is not None and not self.ears.failed

    def heard(self, event: Event) -> None:
        """An event of the streaming recogniser (on the loop)."""
        if isinstance(event, EndOfSpeech):
            return self._provider_ended()
        assert isinstance(event, Heard)
        if not event.final:
            self.interim_pending = bool(event.text)
            if event.text and self.endpointer.speaking:
                self._spawn(self._forward(" ".join([*self.finals, event.text]), round(self.endpointer.speech_start, 2)))
            return None
        self.interim_pending = False
        if event.text:
            self.finals.append(event.text)
        self.final_arrived.set()
        if event.speech_final:
            self._provider_ended()
        return None

    async def _forward(self, text: str, start: float) -> None:
        await self.on_partial(text, start)

    def lost(self, failure: LaneFailure) -> None:
        """The streaming recogniser failed (on the loop): the local engines hear from now on."""
        lane = self.ears.lane_id if self.ears is not None else "?"
        if self.on_note is not None:
            self.on_note(conversation.lane_note("stt", lane, failure))
        self.final_arrived.set()

    def _provider_ended(self) -> None:
        """The provider's end of speech: it ends the turn during a pause that Smart Turn did
        not call incomplete; one that comes while our detector still hears speech ends the
        turn at the pause that follows within PROVIDER_LEAD_SEC (later, it is stale)."""
        if not self.endpointer.paused:
            self.provider_ended_at = self.loop.time() if self.endpointer.speaking else None
            return
        if self.incomplete_pause == self.pause_no:
            return
        utterance = self.endpointer.end_now()
        if utterance is not None:
            self._ended(utterance)

    async def _streamed_text(self, utterance: Utterance) -> str:
        """The turn's text from the streaming recogniser's final results (a Finalize asks
        for what it holds); the local engines' when it failed or heard nothing."""
        if self.streaming and (self.interim_pending or not self.finals):
            assert self.ears is not None
            self.final_arrived.clear()
            self.ears.finalize()
            try:
                await asyncio.wait_for(self.final_arrived.wait(), FINAL_WAIT_SEC)
            except TimeoutError:
                pass
        text, self.finals, self.interim_pending = " ".join(self.finals).strip(), [], False
        if text and self.streaming:
            return text
        return await self._recognise(utterance.pcm)

    def feed(self, pcm: bytes, wire_audio: bytes = b"") -> list[float]:
        """The caller's audio (16 kHz PCM; `wire_audio`: the same as it came on the wire,
        for a streaming recogniser); returns the times (seconds of the caller's audio) at
        which the caller started speaking in it (the agent stops talking)."""
        if self.streaming and wire_audio:
            assert self.ears is not None
            self.ears.send(wire_audio)
        voiced = self.endpointer.voiced_frames
        events = self.endpointer.feed(pcm)
        if self.endpointer.voiced_frames != voiced:
            self.last_voice_at = self.loop.time()
        started = []
        for kind, value in events:
            if kind == "start":
                self.utterance_no += 1
                self.partial_at = 0.0
                started.append(value)
            elif kind == "pause":
                self._paused(value)
            elif kind == "resume":
                self.speculation = None  # more speech came: the audio at the pause was not all
            else:
                self._ended(value)
        self._maybe_partial()
        return started

    async def settled(self) -> None:
        """Waits until the end-of-turn model has answered every question asked so far."""
        while self.asking:
            await asyncio.wait(list(self.asking))

    def close(self) -> None:
        if self.ears is not None:
            self.ears.close()
        for task in list(self.tasks):
            task.cancel()

    # --- the end of a turn -------------------------------------------------------------
    def _paused(self, pause: Pause) -> None:
        model = smart_turn()
        ended_before, self.provider_ended_at = self.provider_ended_at, None
        if pause.first:
            self.pause_no += 1
            if self.streaming and ended_before is not None and self.loop.time() - ended_before <= PROVIDER_LEAD_SEC:
                utterance = self.endpointer.end_now()  # the provider heard the end a moment before we did
                if utterance is not None:
                    return self._ended(utterance)
            if not self.streaming:  # a streaming recogniser's results are there when the turn ends
                self.speculation = (self.pause_no, self._spawn(self._recognise(pause.pcm)))
            # The model decides when it is there (loaded by get_ready); else the fixed pause.
            self.endpointer.hangover = LONG_HANGOVER if model.ready else Endpointer.HANGOVER
        if model.ready:
            ask = self._spawn(self._ask(self.pause_no, pause.pcm))
            self.asking.add(ask)
            ask.add_done_callback(self.asking.discard)

    async def _ask(self, pause_no: int, pcm: bytes) -> None:
        probability = await self.loop.run_in_executor(_TURN_MODEL_POOL, smart_turn().probability, pcm)
        if probability is not None and probability < COMPLETE and pause_no == self.pause_no:
            self.incomplete_pause = pause_no  # the provider's end of speech does not end this pause
        if probability is None or probability < COMPLETE or pause_no != self.pause_no:
            return
        utterance = self.endpointer.end_now()  # None: speech came back, or the pause ended the turn already
        if utterance is not None:
            self._ended(utterance)

    def _ended(self, utterance: Utterance) -> None:
        speculation, self.speculation = self.speculation, None
        if self.streaming:
            transcript, speculative = self._spawn(self._streamed_text(utterance)), False
        elif speculation is not None and speculation[0] == self.pause_no:
            transcript, speculative = speculation[1], True
        else:  # no pause (an utterance cut at its longest), or speech after it
            transcript, speculative = self._spawn(self._recognise(utterance.pcm)), False
        self.on_turn(Turn(utterance=utterance, transcript=transcript, spoken_end_at=self.last_voice_at,
                          decided_at=self.loop.time(), speculative=speculative))

    async def _recognise(self, pcm: bytes) -> str:
        return await _hear(pcm, language=self.language, phrases=self.keyterms or None)

    # --- partial transcripts -----------------------------------------------------------
    def _maybe_partial(self) -> None:
        endpointer = self.endpointer
        if (self.streaming or not endpointer.speaking or endpointer.paused or self.partial_task is not None
                or endpointer.speech_sec - self.partial_at < PARTIAL_EVERY_SEC):
            return
        self.partial_at = endpointer.speech_sec
        self.partial_task = self._spawn(self._partial(self.utterance_no, endpointer.so_far(),
                                                      round(endpointer.speech_start, 2)))

    async def _partial(self, utterance_no: int, pcm: bytes, start: float) -> None:
        try:
            text = await _draft(pcm, language=self.language)
        except Exception:  # noqa: BLE001 - a draft that failed is only a missing preview
            logger.info("A partial transcript failed", exc_info=True)
            text = None
        finally:
            self.partial_task = None
        if text and utterance_no == self.utterance_no and self.endpointer.speaking:
            await self.on_partial(text, start)

    # --- helpers ---------------------------------------------------------------------------
    def _spawn(self, coroutine: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
        task = asyncio.ensure_future(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Future[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            task.exception()  # retrieved here: a dropped speculation's failure is nobody's concern
