"""The live probes of this process's speech engines (console.engines registry).

The synthesis probe speaks a short test sentence once per process: `usableNow` means
that synthesis really worked here, not that a library is installed. The Whisper
probe transcribes a short German clip spoken by eSpeak NG, in a background thread:
loading the model and transcribing take seconds, and /health never waits for them
(until the first result it reports "warming up"). Results are kept, so /health stays
fast; a failure is retried after a minute, so an engine installed while the server
runs shows up without a restart.
"""
import io
import logging
import re
import threading
import time
import wave
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from console.engines import EngineStatus, engine_probes
from console.errors import ApiError
from speech_app.decode import decode_to_pcm
from speech_app.stt import Deadline, model_name, recognizer
from speech_app.tts import INSTALL_HINT, synthesizer

logger = logging.getLogger("speech_app.probes")
_RETRY_FAILED_PROBE_SEC = 60
_TEST_SENTENCE = "Test."
# The recognition probe's clip; usable when at least half of its words come back.
_TEST_CLIP_TEXT = "Guten Morgen, mein Name ist Günther Schäfer."
_TEST_CLIP_VOICE = "de"
# Generous: the first probe of a process also loads (and on the very first start of
# an installation joins and verifies) the model.
_PROBE_DEADLINE_SEC = 120
WARMING_UP = "warming up: loading the model and transcribing a test clip"


@dataclass(frozen=True)
class SttEngineStatus(EngineStatus):
    """An STT engine's status with its models: configured per language, and loaded."""

    configured_models: dict = field(default_factory=dict)
    loaded_models: dict = field(default_factory=dict)

    def as_json(self):
        return {**super().as_json(), "models": {"configured": self.configured_models, "loaded": self.loaded_models}}


class SynthesisProbe:
    def __init__(self):
        self._lock = threading.Lock()
        self._result = None  # (usable, reason)
        self._checked_at = 0.0

    def __call__(self):
        engine = synthesizer()
        usable, reason = self._test_synthesis(engine)
        voice = settings.SPEECH_DEFAULT_VOICE
        return EngineStatus(
            id=engine.id, kind="tts", name=engine.name, engine=engine.engine, mode=engine.mode,
            # The first language is the voice in use (/health's usableVoiceProfile).
            languages=(voice.partition("+")[0],), usable_now=usable, reason=reason,
        )

    def _test_synthesis(self, engine):
        with self._lock:
            stale = self._result is None or (
                not self._result[0] and time.monotonic() - self._checked_at > _RETRY_FAILED_PROBE_SEC)
            if stale:
                self._result = self._run(engine)
                self._checked_at = time.monotonic()
            return self._result

    @staticmethod
    def _run(engine):
        try:
            speech = engine.synthesize(_TEST_SENTENCE, voice=settings.SPEECH_DEFAULT_VOICE)
        except ApiError as exc:
            return False, exc.message
        except Exception as exc:  # noqa: BLE001 - any failure means "not usable", with the reason
            return False, f"test synthesis failed: {exc}. {INSTALL_HINT}"
        if speech.duration_sec <= 0:
            return False, "test synthesis produced no audio"
        return True, ""


@dataclass(frozen=True)
class WhisperEngineStatus(EngineStatus):
    model: str = ""
    loaded: bool = False

    def as_json(self):
        return {**super().as_json(), "model": self.model, "loaded": self.loaded}


def _words(text):
    return re.findall(r"[^\W\d_]+", text.lower())


class RecognitionProbe:
    """usableNow of Whisper: a real transcription of a German test clip, run in the
    background on the first status request and kept (failures retried after a minute)."""

    def __init__(self, engine=lambda: recognizer("whisper")):
        self._engine = engine
        self._lock = threading.Lock()
        self._result = None  # (usable, reason)
        self._checked_at = 0.0
        self._thread = None

    def __call__(self):
        engine = self._engine()
        with self._lock:
            stale = self._result is None or (
                not self._result[0] and time.monotonic() - self._checked_at > _RETRY_FAILED_PROBE_SEC)
            if stale and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self._run, args=(engine,), name="whisper-probe", daemon=True)
                self._thread.start()
            usable, reason = self._result or (False, WARMING_UP)
        return WhisperEngineStatus(
            id=engine.id, kind="stt", name=engine.name, engine=engine.engine, mode=engine.mode,
            languages=engine.languages(), usable_now=usable, reason=reason,
            model=engine.model_name, loaded=engine.loaded)

    def wait(self, timeout):
        """Waits for a running probe (benchmarks and tests; the server never waits)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _run(self, engine):
        try:
            result = self._test_transcription(engine)
        except Exception as exc:  # noqa: BLE001 - any failure means "not usable", with the reason
            logger.exception("The Whisper probe failed")
            result = (False, f"test transcription failed: {exc}")
        with self._lock:
            self._result, self._checked_at = result, time.monotonic()

    @staticmethod
    def _test_transcription(engine):
        try:
            speech = synthesizer().synthesize(_TEST_CLIP_TEXT, voice=_TEST_CLIP_VOICE)
        except ApiError as exc:
            return False, f"the test clip could not be spoken: {exc.message}"
        buffer = io.BytesIO()
        with wave.open(buffer, "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(speech.sample_rate)
            wav.writeframes(speech.pcm)
        pcm = decode_to_pcm(buffer.getvalue()).pcm  # 16 kHz, as every request is fed
        try:
            transcript = engine.transcribe(pcm, language="de", deadline=Deadline(_PROBE_DEADLINE_SEC))
        except ApiError as exc:
            return False, exc.message
        expected, heard = _words(_TEST_CLIP_TEXT), set(_words(transcript.text))
        if sum(word in heard for word in expected) * 2 < len(expected):
            return False, f"the test clip came back as {transcript.text!r}"
        return True, ""


def recognition_status():
    """Vosk's status: the configured models that exist (it loads them on first use)."""
    engine = recognizer("vosk")
    # Model names only: this open endpoint does not reveal the server's file paths.
    configured = {lang: model_name(path) for lang, path in sorted(settings.VOSK_MODELS.items())}
    present = [lang for lang, path in sorted(settings.VOSK_MODELS.items()) if Path(path).is_dir()]
    try:
        import vosk  # noqa: F401
        missing_package = False
    except ImportError:
        missing_package = True
    if missing_package:
        reason = "the Python package vosk is not installed"
    elif not configured:
        reason = "no model configured: set VOSK_MODELS (e.g. de=/srv/models/vosk-model-small-de-0.15)"
    elif not present:
        reason = "no configured model directory exists"
    else:
        reason = ""
    return SttEngineStatus(
        id=engine.id, kind="stt", name=engine.name, engine=engine.engine, mode=engine.mode,
        languages=tuple(present), usable_now=not reason, reason=reason,
        configured_models=configured, loaded_models=engine.loaded_models(),
    )


synthesis_status = SynthesisProbe()
whisper_status = RecognitionProbe()


def register_probes():
    engine_probes.register("espeak", synthesis_status)
    engine_probes.register("whisper", whisper_status)
    engine_probes.register("vosk", recognition_status)
