"""A streaming recogniser's connection for one conversation (speech_app.streaming), run
in a thread of its own so that the event loop never waits on the provider.

The loop hands in the caller's audio as it came on the wire (`send`: an A-law/μ-law
phone call's bytes unconverted), asks for `finalize` at a turn's end and `close` at
the call's end; the thread sends them in order, keeps the connection alive while no
audio flows (KeepAlive every `KEEP_ALIVE_SECONDS`), and hands every event the
provider sends to the loop (`on_event`), or once the failure that ended it
(`on_failure`, a LaneFailure: after it, nothing more is sent or received). Each frame
is paid from the call's budget (agent_app.spend) before it is sent: a frame past it
ends the recognition as `over_budget` (the local engines hear the rest of the call).
When it ends, the audio it sent is counted in the lane's usage (audio minutes), and a
failure puts the lane in a cooldown as any lane's (the next calls are heard locally
until it ends)."""
import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable

from django.db import connections

from agent_app.spend import CallSpend
from registry_app.lanes.failover import LaneFailure
from speech_app.services import recognition_cost, streaming_recognition_done
from speech_app.streaming import CallAudio, Event, RecognitionSession, StreamingRecognizer

logger = logging.getLogger("agent_app")

# Seconds without audio after which the connection is kept alive (Deepgram closes after 10 s).
KEEP_ALIVE_SECONDS = 4.0
# How long the thread waits for the provider's events between two looks at the outbox.
POLL_SECONDS = 0.02
_FINALIZE, _CLOSE = "finalize", "close"


class Ears:
    def __init__(self, engine: StreamingRecognizer, *, audio: CallAudio, language: str, keyterms: list[str],
                 loop: asyncio.AbstractEventLoop, on_event: Callable[[Event], None],
                 on_failure: Callable[[LaneFailure], None], spend: CallSpend | None = None) -> None:
        self.engine, self.audio, self.language, self.keyterms = engine, audio, language, keyterms
        self.spend = spend
        self.loop, self.on_event, self.on_failure = loop, on_event, on_failure
        self.failed = False  # set on the loop when the failure arrived
        self._outbox: queue.Queue[bytes | str] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=f"ears-{engine.lane_id}", daemon=True)

    @property
    def lane_id(self) -> str:
        return self.engine.lane_id

    def start(self) -> None:
        self._thread.start()

    def send(self, frame: bytes) -> None:
        if not self.failed:
            self._outbox.put(frame)

    def finalize(self) -> None:
        if not self.failed:
            self._outbox.put(_FINALIZE)

    def close(self) -> None:
        self._outbox.put(_CLOSE)

    def _to_loop(self, call: Callable[..., None], *args: object) -> None:
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(call, *args)

    def _failed(self, failure: LaneFailure) -> None:
        self.failed = True
        self.on_failure(failure)

    def _pay(self, cost: Callable[[float], float], sent: int, size: int) -> None:
        """Takes the price of `size` more bytes of audio from the call's budget; LaneFailure
        `over_budget` when they do not fit."""
        if self.spend is None:
            return
        rate = self.audio.bytes_per_second
        if not self.spend.take(cost((sent + size) / rate) - cost(sent / rate)):
            raise LaneFailure("over_budget", f"{self.spend.spent:.4f} von {self.spend.max_eur:g} EUR")

    def _run(self) -> None:
        session: RecognitionSession | None = None
        sent, failed = 0, None
        try:
            cost = recognition_cost(self.engine.lane_id)
            session = self.engine.open(audio=self.audio, language=self.language, keyterms=self.keyterms)
            last_audio = time.monotonic()
            while True:
                try:
                    item = self._outbox.get(timeout=POLL_SECONDS)
                except queue.Empty:
                    item = None
                if item == _CLOSE:
                    return
                if item == _FINALIZE:
                    session.finalize()
                elif isinstance(item, bytes):
                    self._pay(cost, sent, len(item))
                    session.send(item)
                    sent += len(item)
                    last_audio = time.monotonic()
                elif time.monotonic() - last_audio > KEEP_ALIVE_SECONDS:
                    session.keep_alive()
                    last_audio = time.monotonic()
                for event in session.events(0):
                    self._to_loop(self.on_event, event)
        except LaneFailure as failure:
            logger.warning("Streaming recognition on %s failed: %s", self.engine.lane_id, failure)
            failed = failure
            self._to_loop(self._failed, failure)
        finally:
            if session is not None:
                session.close()
            try:  # the audio sent is paid for, failed or not; a failure cools the lane down
                lane_failed = failed if failed is not None and failed.outcome != "over_budget" else None
                streaming_recognition_done(self.engine.lane_id, audio_seconds=sent / self.audio.bytes_per_second,
                                           failure=lane_failed)
            except Exception:  # noqa: BLE001 - usage is bookkeeping: never the call's failure
                logger.exception("The usage of %s could not be counted", self.engine.lane_id)
            finally:
                connections.close_all()  # this thread's own database connection
