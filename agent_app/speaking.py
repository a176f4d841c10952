"""The agent's speech on its way out: what it says as the text comes, synthesised
sentence by sentence in a worker thread, and each reply's timing.

A reply's text comes from the assistant's mind while the model streams
(`Mind.turn(say=…)`): its sentences arrive one by one on a `Lines`, from the mind's
worker thread. `synthesise` makes their audio in a thread of its own, sentence after
sentence, as soon as each is there, and hands every piece to the event loop, which
sends it paced to real time (agent_app.session). So the first sentence is heard while
the model still writes the second and the synthesiser makes it. Texts known at once
(the opening, a filler) go the same way, on Lines closed from the start."""
import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from agent_app import conversation
from agent_app.audio import WireFormat
from agent_app.spend import CallSpend
from agent_app.threads import in_pool

# What the synthesis hands the loop: (part index, wire audio), a system note for the
# transcript (a speech lane that failed: str), then None or what stopped it.
SpeechItem = tuple[int, bytes] | str | BaseException | None
# Threads that synthesise (and wait for a reply's next sentence): apart from the loop's
# default threads, which the minds' turns and the database writes share.
_SYNTHESIS = concurrent.futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="agent-speaking")


class Lines:
    """The text of one utterance of the agent, in parts (sentences) as they come.

    Thread-safe: the mind's thread `add`s and finally `close`s; the synthesis thread
    waits for the `next` part; the loop reads the parts to announce (`since`) and
    awaits the first (`started`). `first_at` is the loop time the first part came."""

    def __init__(self, loop: asyncio.AbstractEventLoop, parts: Iterable[str] = ()) -> None:
        self.loop = loop
        self._parts = [part for part in (part.strip() for part in parts) if part]
        self._closed = self._stopped = False
        self._changed = threading.Condition()
        self._on_stop: list[Callable[[], None]] = []
        self._arrived = asyncio.Event()
        self.first_at: float | None = loop.time() if self._parts else None

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop, parts: Iterable[str]) -> "Lines":
        """Lines whose parts are all known (an opening, a filler)."""
        lines = cls(loop, parts)
        lines.close()
        return lines

    def add(self, part: str) -> None:
        """A sentence more (any thread)."""
        part = part.strip()
        if not part:
            return
        with self._changed:
            if self._closed:
                return
            self._parts.append(part)
            self._changed.notify_all()
        self._wake()

    def close(self) -> None:
        """No more parts will come (any thread)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._wake()

    def stop(self) -> None:
        """The speech was stopped (a barge-in, the end): the synthesis waits no longer,
        and a provider speaking it now is cancelled at once (`on_stop`)."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
            cancels, self._on_stop = self._on_stop, []
        for cancel in cancels:  # a provider's goodbye may take a round trip: never on the loop
            _SYNTHESIS.submit(cancel)

    def on_stop(self, cancel: Callable[[], None]) -> Callable[[], None]:
        """`cancel()` is called when the speech stops (at once if it has); returns the
        function that forgets it (the provider's answer was whole)."""
        with self._changed:
            if not self._stopped:
                self._on_stop.append(cancel)
                return lambda: self._forget(cancel)
        cancel()
        return lambda: None

    def _forget(self, cancel: Callable[[], None]) -> None:
        with self._changed:
            if cancel in self._on_stop:
                self._on_stop.remove(cancel)

    @property
    def stopped(self) -> bool:
        return self._stopped

    def next(self, index: int) -> str | None:
        """Part `index` once it is there, or None when there will be none (blocking)."""
        with self._changed:
            self._changed.wait_for(lambda: len(self._parts) > index or self._closed or self._stopped)
            return self._parts[index] if len(self._parts) > index and not self._stopped else None

    def since(self, index: int) -> list[str]:
        with self._changed:
            return list(self._parts[index:])

    async def started(self, timeout: float | None = None) -> bool:
        """Whether a part is there (waiting up to `timeout` seconds for one, or for the
        close); False when the text ended empty or the time ran out."""
        try:
            await asyncio.wait_for(self._arrived.wait(), timeout)
        except TimeoutError:
            return False
        with self._changed:
            return bool(self._parts)

    def _wake(self) -> None:
        def on_loop() -> None:
            if self.first_at is None and self.since(0):
                self.first_at = self.loop.time()
            self._arrived.set()

        if self.loop.is_closed():
            return
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            on_loop()
        else:
            self.loop.call_soon_threadsafe(on_loop)


def _produce(lines: Lines, put: Callable[[SpeechItem], None], *, opening: bool, language: str, voice: str,
             wire: WireFormat, spend: CallSpend | None = None) -> None:
    """The synthesis thread: (part index, wire audio) sentence by sentence through
    `put` (and a note when a speech lane failed and the local engines took over), then
    None — or the exception that stopped it."""
    turn = conversation.TurnSpeech()  # the sentences of this turn: one context at a provider that keeps one
    try:
        index = 0
        while (part := lines.next(index)) is not None:
            pieces: Iterator[bytes] = (
                conversation.opening_audio(part, language=language, voice=voice, wire=wire, on_note=put,
                                           on_stream=lines.on_stop, spend=spend, turn=turn) if opening
                else conversation.speak(part, language=language, voice=voice, wire=wire, on_note=put,
                                        on_stream=lines.on_stop, spend=spend, turn=turn))
            try:
                for pcm in pieces:
                    if lines.stopped:
                        return
                    put((index, pcm))
            finally:
                close = getattr(pieces, "close", None)
                if close is not None:
                    close()  # a streaming lane is cancelled at the provider (barge-in)
            index += 1
        put(None)
    except Exception as exc:  # noqa: BLE001 - handed to the loop, which ends the conversation
        put(exc)
    finally:
        turn.close()


_produce_in_pool = in_pool(_SYNTHESIS, _produce)


async def synthesise(lines: Lines, audio: "asyncio.Queue[SpeechItem]", *, opening: bool, language: str, voice: str,
                     wire: WireFormat, spend: CallSpend | None = None) -> None:
    """Puts (part index, wire audio) on the asyncio queue `audio` as each sentence of
    `lines` is made, then None (or the exception that stopped it). The opening's audio
    comes from the process's cache of openings (conversation.opening_audio); a named
    lane's sentences are paid from the call's `spend`."""
    loop = lines.loop

    def put(item: SpeechItem) -> None:
        loop.call_soon_threadsafe(audio.put_nowait, item)

    await _produce_in_pool(lines, put, opening=opening, language=language, voice=voice, wire=wire, spend=spend)


@dataclass(frozen=True)
class TurnTiming:
    """Loop times of one reply on its way (hearing's and the conversation's clocks)."""

    spoken_end: float  # the caller's last speech arrived
    decided: float  # the end of the turn was decided
    heard: float  # the transcript was there

    def stages(self, *, thought: float, first_audio: float) -> dict[str, int]:
        """Milliseconds from the caller's last speech to the reply's first audio, and its
        stages, which add up to it (`thought`: the reply's first sentence was there)."""
        def ms(start: float, end: float) -> int:
            return max(0, round((end - start) * 1000))

        thought = min(max(thought, self.heard), first_audio)
        return {"total": ms(self.spoken_end, first_audio), "endOfTurn": ms(self.spoken_end, self.decided),
                "recognition": ms(self.decided, self.heard), "thinking": ms(self.heard, thought),
                "synthesis": ms(thought, first_audio)}


# turn.latency's names → TurnLatency's columns.
STAGE_COLUMNS = {"total": "total_ms", "endOfTurn": "end_of_turn_ms", "recognition": "recognition_ms",
                 "thinking": "thinking_ms", "synthesis": "synthesis_ms"}
