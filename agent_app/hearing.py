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
from agent_app.threads import in_pool
from speech_app.smart_turn import COMPLETE, smart_turn

logger = logging.getLogger("agent_app")
T = TypeVar("T")

# Frames of silence (30 ms each) after which a turn ends when the end-of-turn model did
# not say it was complete: ~1 s, twice the fixed pause, for a caller who stops mid-sentence.
LONG_HANGOVER = 34
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
                 on_partial: Callable[[str, float], Awaitable[None]]) -> None:
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

    def feed(self, pcm: bytes) -> list[float]:
        """The caller's audio (16 kHz PCM); returns the times (seconds of the caller's
        audio) at which the caller started speaking in it (the agent stops talking)."""
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
        for task in list(self.tasks):
            task.cancel()

    # --- the end of a turn -------------------------------------------------------------
    def _paused(self, pause: Pause) -> None:
        model = smart_turn()
        if pause.first:
            self.pause_no += 1
            self.speculation = (self.pause_no, self._spawn(self._recognise(pause.pcm)))
            # The model decides when it is there (loaded by get_ready); else the fixed pause.
            self.endpointer.hangover = LONG_HANGOVER if model.ready else Endpointer.HANGOVER
        if model.ready:
            ask = self._spawn(self._ask(self.pause_no, pause.pcm))
            self.asking.add(ask)
            ask.add_done_callback(self.asking.discard)

    async def _ask(self, pause_no: int, pcm: bytes) -> None:
        probability = await self.loop.run_in_executor(_TURN_MODEL_POOL, smart_turn().probability, pcm)
        if probability is None or probability < COMPLETE or pause_no != self.pause_no:
            return
        utterance = self.endpointer.end_now()  # None: speech came back, or the pause ended the turn already
        if utterance is not None:
            self._ended(utterance)

    def _ended(self, utterance: Utterance) -> None:
        speculation, self.speculation = self.speculation, None
        if speculation is not None and speculation[0] == self.pause_no:
            transcript, speculative = speculation[1], True
        else:  # no pause (an utterance cut at its longest), or speech after it
            transcript, speculative = self._spawn(self._recognise(utterance.pcm)), False
        self.on_turn(Turn(utterance=utterance, transcript=transcript, spoken_end_at=self.last_voice_at,
                          decided_at=self.loop.time(), speculative=speculative))

    async def _recognise(self, pcm: bytes) -> str:
        return await _hear(pcm, language=self.language)

    # --- partial transcripts -----------------------------------------------------------
    def _maybe_partial(self) -> None:
        endpointer = self.endpointer
        if (not endpointer.speaking or endpointer.paused or self.partial_task is not None
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
