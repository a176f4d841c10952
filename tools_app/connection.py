"""The admin's "Verbindung prüfen" of an assistant (issue 39 §3): each lane the
assistant names is called once, as a conversation would call it — the chat lane with a
short turn (`gateway_chat`, the named lane first), the voice with a short sentence (a
streaming lane's own synthesiser, else `gateway_speak`), the transcriber's streaming
lane with a second of silence — and the outcome is told in German, with the lane that
answered and how long it took. Registered in console.assistants.references by this
app, which may call the gateway and speech (the core may not)."""
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from console.errors import ApiError
from gateway_app.services import gateway_chat, gateway_speak
from gateway_app.turns import ChatDone
from registry_app.lanes.failover import LaneFailure
from speech_app.cache import RenderedAudio
from speech_app.services import lane_voice, streaming_recognizer_for, streaming_synthesizer_for
from speech_app.streaming import CallAudio

CHECK_DEADLINE_SEC = 20.0
TEST_SENTENCE = "Dies ist ein Verbindungstest."
TEST_AUDIO = CallAudio("linear16", 16000)
MODES = {"mock": "Offline-Regelwerk", "api": "API", "cli": "Programm", "local": "lokal"}


@dataclass(frozen=True)
class Outcome:
    ok: bool
    text: str  # German, for the admin


def _ms(started: float) -> str:
    return f"{(time.monotonic() - started) * 1000:,.0f} ms".replace(",", ".")


def _why(exc: BaseException) -> str:
    """What went wrong, shortly (a lane's own words are technical: kept as they are)."""
    if isinstance(exc, LaneFailure):
        return f"{exc.outcome}: {exc.detail}"[:200]
    if isinstance(exc, ApiError):
        attempts = exc.details.get("attempts") if isinstance(exc.details, dict) else None
        tried = "; ".join(f"{item.get('lane')}: {item.get('outcome')}" for item in attempts or [] if isinstance(item, dict))
        return (f"{exc.code}" + (f" ({tried})" if tried else f": {exc.message}"))[:300]
    return exc.__class__.__name__


def chat_check(assistant: Any) -> Outcome:
    started = time.monotonic()
    named = assistant.model_lane or None
    try:
        with gateway_chat(messages=[{"role": "system", "content": "Antworte in einem kurzen deutschen Satz."},
                                    {"role": "user", "content": "Verbindungstest: Bitte bestätige kurz."}],
                          lane=named, language=assistant.language or None, max_tokens=30,
                          deadline=CHECK_DEADLINE_SEC, stream=False) as stream:
            done = next(event for event in stream if isinstance(event, ChatDone))
    except (ApiError, LaneFailure) as exc:
        return Outcome(False, f"Sprachmodell{f' {named}' if named else ''}: keine Antwort ({_why(exc)}).")
    answered = f"{done.lane} ({MODES.get(done.mode, done.mode)})"
    if named and done.lane != named:
        failed = next((attempt for attempt in done.attempts if attempt.lane == named), None)
        reason = f" ({failed.outcome}{': ' + failed.detail if failed.detail else ''})" if failed else ""
        return Outcome(False, f"Sprachmodell: Die gewählte Lane {named} antwortete nicht{reason}; stattdessen "
                              f"antwortete {answered} in {_ms(started)}.")
    return Outcome(True, f"Sprachmodell: {answered} antwortete in {_ms(started)}: „{done.text.strip()[:120]}“")


def voice_check(assistant: Any) -> Outcome:
    started = time.monotonic()
    named = lane_voice(assistant.voice)
    what = f"Stimme {assistant.voice}" if assistant.voice else "Stimme (Standard der Sprache)"
    try:
        streaming = streaming_synthesizer_for(assistant.voice) if named else None
        if streaming is not None:
            size = sum(len(chunk) for chunk in streaming.speak(TEST_SENTENCE, audio=TEST_AUDIO,
                                                               language=assistant.language).chunks())
            if not size:
                raise LaneFailure("invalid", "no audio")
            seconds, lane = size / TEST_AUDIO.bytes_per_second, streaming.lane_id
        else:
            answer = gateway_speak(text=TEST_SENTENCE, voice=(named[1] if named else assistant.voice) or None,
                                   language=assistant.language or None, lane=named[0] if named else None)
            seconds, lane = cast(RenderedAudio, answer.result).duration_sec, answer.lane
    except (ApiError, LaneFailure) as exc:
        return Outcome(False, f"{what}: nicht erreichbar ({_why(exc)}).")
    if named and lane != named[0]:
        return Outcome(False, f"{what}: Die Lane {named[0]} sprach nicht; stattdessen {lane}.")
    spoken = f"{seconds:.1f}".replace(".", ",")
    return Outcome(True, f"{what}: {lane} sprach {spoken} s Testaudio in {_ms(started)}.")


def transcriber_check(assistant: Any) -> Outcome | None:
    lane_id = (assistant.transcriber or {}).get("lane")
    if not lane_id:
        return None  # this service's own recognition: nothing remote to call
    started = time.monotonic()
    try:
        session = streaming_recognizer_for(lane_id).open(audio=TEST_AUDIO, language=assistant.language or "de",
                                                         keyterms=[])
        try:
            for _ in range(10):  # a second of silence in 100 ms frames
                session.send(bytes(TEST_AUDIO.bytes_per_second // 10))
            session.finalize()
            session.events(timeout=1.0)
        finally:
            session.close()
    except (ApiError, LaneFailure) as exc:
        return Outcome(False, f"Spracherkennung {lane_id}: nicht erreichbar ({_why(exc)}).")
    return Outcome(True, f"Spracherkennung {lane_id}: verbunden, Testaudio angenommen in {_ms(started)}.")


CHECKS: tuple[Callable[[Any], Outcome | None], ...] = (chat_check, voice_check, transcriber_check)


def assistant_connection_test(assistant: Any) -> list[tuple[bool, str]]:
    """[(ok, German text)] of each lane the assistant names, each called once."""
    return [(outcome.ok, outcome.text) for check in CHECKS if (outcome := check(assistant)) is not None]
