"""Speech recognition behind one small interface (`speech_app.recognition`), the
engines of this process by id, and the Vosk engine.

Views and services only know `Recognizer` (`recognizer(engine_id)` returns this
process's instance); `speech_app.services.recognizer_for` picks one per language
through the registry's router. Engines: Whisper (`speech_app.whisper`, the default,
German and about a hundred other languages out of the box) and Vosk (this module,
for the languages an operator configures in `VOSK_MODELS`).

Vosk models come only from the paths in `settings.VOSK_MODELS` (`lang=path` pairs):
the model is always constructed from a directory path. Vosk's other ways of naming a
model (by language or by model name) download it from the internet and are never
used. A model is shared by all threads of the process (Kaldi models are read-only);
each transcription gets its own recognizer.
"""
import json
import re
import threading
import time
from functools import lru_cache
from pathlib import Path

from django.conf import settings

from speech_app.decode import SAMPLE_RATE
from speech_app.errors import InvalidLanguage, SttBusy, SttUnavailable
from speech_app.recognition import AUTO_LANGUAGE, Recognizer, Segment, Transcript, Word

DEFAULT_LANGUAGE = "de"
LANGUAGE_PATTERN = re.compile(r"^[a-z]{2,3}$")
# Feeding about a quarter second at a time lets Vosk end utterances at pauses, so
# long recordings come back as several results instead of one run-on final result.
_CHUNK_BYTES = SAMPLE_RATE // 4 * 2
# What a client waits before retrying a recognition that hit its deadline: an
# abandoned transcription stops at its next segment, within seconds.
RETRY_AFTER_SEC = 10


def install_hint(language):
    return (f"Install a Vosk model for '{language}' on the server (for German e.g. vosk-model-small-de-0.15, "
            f"unpacked into a directory) and add '{language}=/path/to/model' to the VOSK_MODELS environment "
            "variable; see the README.")


def checked_language(language, default=DEFAULT_LANGUAGE):
    """`language`, or `default` when None; InvalidLanguage when malformed."""
    if language is None:
        return default
    if language == AUTO_LANGUAGE:
        return language
    if not isinstance(language, str) or not LANGUAGE_PATTERN.match(language):
        raise InvalidLanguage(details={"language": [InvalidLanguage.message]})
    return language


class Deadline:
    """When a recognition must be done: settings' base + per-audio-second × the
    audio's length, never more than STT_DEADLINE_MAX_SEC (below the worker timeout)."""

    def __init__(self, seconds):
        self.seconds = seconds
        self._ends = time.monotonic() + seconds

    @classmethod
    def for_audio(cls, duration_sec):
        seconds = settings.STT_DEADLINE_BASE_SEC + settings.STT_DEADLINE_PER_AUDIO_SEC * duration_sec
        return cls(max(0.0, min(seconds, settings.STT_DEADLINE_MAX_SEC)))

    def remaining(self):
        return max(0.0, self._ends - time.monotonic())

    def expired(self):
        return time.monotonic() >= self._ends

    def missed(self, *, duration_sec, done_sec=None):
        """The 503 for a recognition that did not finish in time."""
        progress = f" ({done_sec:.0f} of {duration_sec:.0f} s transcribed)" if done_sec is not None else ""
        return SttBusy(
            f"Speech recognition could not finish {duration_sec:.1f} s of audio within {self.seconds:.0f} s"
            f"{progress}: the engine is busy or the audio is too long for one request. Retry later, or send "
            "shorter audio.",
            details={"deadlineSec": round(self.seconds, 1), "durationSec": round(duration_sec, 2)},
            headers={"Retry-After": str(RETRY_AFTER_SEC)})


def model_name(path):
    """A readable model name: the model's directory (or its package, for `…/model`)."""
    path = Path(path)
    return path.parent.name if path.name == "model" else path.name


class VoskRecognizer(Recognizer):
    id, name, engine, mode = "vosk", "Vosk", "vosk", "offline"

    def __init__(self):
        self._models = {}  # path -> vosk.Model
        self._lock = threading.Lock()

    def serves(self, language: str) -> bool:
        return language in settings.VOSK_MODELS

    def loaded_models(self):
        """{language: model name} of the configured models already loaded here."""
        return {lang: model_name(path) for lang, path in sorted(settings.VOSK_MODELS.items())
                if path in self._models}

    def model_for(self, language):
        """The loaded model for `language` (loading it on first use), or SttUnavailable."""
        path = settings.VOSK_MODELS.get(language)
        if not path:
            raise SttUnavailable(f"No speech recognition model is installed for '{language}'. "
                                 + install_hint(language), details={"language": language})
        model = self._models.get(path)
        if model is None:
            with self._lock:  # one load per process, even under concurrent first requests
                model = self._models.get(path) or self._load(language, path)
        return model

    def _load(self, language, path):
        try:
            import vosk
        except ImportError:
            raise SttUnavailable("The Python package vosk is not installed. " + install_hint(language)) from None
        if not Path(path, "am").is_dir() and not Path(path, "conf").is_dir():
            raise SttUnavailable(f"VOSK_MODELS names '{path}' for '{language}', which is not a Vosk model "
                                 "directory. " + install_hint(language), details={"language": language})
        vosk.SetLogLevel(-1)
        try:
            model = vosk.Model(model_path=str(path))
        except Exception as exc:  # noqa: BLE001 - vosk raises a bare Exception when Kaldi cannot load the model
            raise SttUnavailable(f"The Vosk model for '{language}' could not be loaded ({exc}). "
                                 + install_hint(language), details={"language": language}) from None
        self._models[path] = model
        return model

    def transcribe(self, pcm: bytes, *, language: str, phrases: list[str] | None = None,
                   deadline: Deadline | None = None) -> Transcript:
        """A Transcript of 16 kHz mono PCM; `phrases` restricts recognition to them.

        Vosk works in the request's thread, a quarter second of audio at a time, so
        the deadline is checked between chunks."""
        import vosk

        if language == AUTO_LANGUAGE:
            raise SttUnavailable("Vosk cannot detect the language: name one.", details={"language": language})
        model = self.model_for(language)
        if phrases:
            # Vosk needs the grammar as real UTF-8 text: with escaped non-ASCII
            # characters (ensure_ascii) it silently recognises nothing.
            recognizer = vosk.KaldiRecognizer(model, SAMPLE_RATE, json.dumps(phrases, ensure_ascii=False))
        else:
            recognizer = vosk.KaldiRecognizer(model, SAMPLE_RATE)
        recognizer.SetWords(True)
        results = []
        duration_sec = len(pcm) / 2 / SAMPLE_RATE
        for offset in range(0, len(pcm), _CHUNK_BYTES):
            if deadline is not None and deadline.expired():
                raise deadline.missed(duration_sec=duration_sec, done_sec=offset / 2 / SAMPLE_RATE)
            if recognizer.AcceptWaveform(pcm[offset:offset + _CHUNK_BYTES]):
                results.append(json.loads(recognizer.Result()))
        results.append(json.loads(recognizer.FinalResult()))
        words = [
            Word(word=item["word"], start=round(item["start"], 2), end=round(item["end"], 2),
                 conf=round(item["conf"], 3))
            for result in results for item in result.get("result", [])
        ]
        # Each Vosk result is one utterance, ended at a pause: a segment.
        segments = [
            Segment(start=round(result["result"][0]["start"], 2), end=round(result["result"][-1]["end"], 2),
                    text=result["text"])
            for result in results if result.get("text") and result.get("result")
        ]
        return Transcript(
            text=" ".join(result["text"] for result in results if result.get("text")),
            words=words,
            segments=segments,
            duration_sec=duration_sec,
            engine=self.engine,
            model=model_name(settings.VOSK_MODELS[language]),
            language=language,
        )


def _whisper():
    from speech_app.whisper import WhisperRecognizer  # imports faster-whisper only when used

    return WhisperRecognizer()


# This process's recognition engines, by the id that registry lanes name them with
# (`stt-whisper-base` → whisper); speech_app.services picks one per language.
RECOGNIZERS = {"whisper": _whisper, "vosk": VoskRecognizer}
DEFAULT_RECOGNIZER = "whisper"


def recognizer(engine_id=DEFAULT_RECOGNIZER):
    """The recognition engine `engine_id` of this process (one instance per process)."""
    return _instance(engine_id)


@lru_cache(maxsize=None)
def _instance(engine_id):
    return RECOGNIZERS[engine_id]()
