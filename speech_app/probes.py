"""The live probes of this process's speech engines (console.engines registry).

The synthesis probe speaks a short test sentence once per process: `usableNow` means
that synthesis really worked here, not that a library is installed. The result is
kept, so /health stays fast; a failure is retried after a minute, so an engine
installed while the server runs shows up without a restart.
"""
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from console.engines import EngineStatus, engine_probes
from console.errors import ApiError
from speech_app.stt import model_name, recognizer
from speech_app.tts import INSTALL_HINT, synthesizer

_RETRY_FAILED_PROBE_SEC = 60
_TEST_SENTENCE = "Test."


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


def recognition_status():
    engine = recognizer()
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


def register_probes():
    engine_probes.register("espeak", synthesis_status)
    engine_probes.register("vosk", recognition_status)
