"""Speech recognition with Vosk, one model per language loaded once per process.

Models come only from the paths in `settings.VOSK_MODELS` (`lang=path` pairs):
the model is always constructed from a directory path. Vosk's other ways of naming a
model (by language or by model name) download it from the internet and are never
used. A model is shared by all threads of the process (Kaldi models are read-only);
each transcription gets its own recognizer.
"""
import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from speech_app.decode import SAMPLE_RATE
from speech_app.errors import InvalidLanguage, SttUnavailable

DEFAULT_LANGUAGE = "de"
LANGUAGE_PATTERN = re.compile(r"^[a-z]{2,3}$")
# Feeding about a quarter second at a time lets Vosk end utterances at pauses, so
# long recordings come back as several results instead of one run-on final result.
_CHUNK_BYTES = SAMPLE_RATE // 4 * 2


def install_hint(language):
    return (f"Install a Vosk model for '{language}' on the server (for German e.g. vosk-model-small-de-0.15, "
            f"unpacked into a directory) and add '{language}=/path/to/model' to the VOSK_MODELS environment "
            "variable; see the README.")


@dataclass(frozen=True)
class Word:
    word: str
    start: float
    end: float
    conf: float

    def as_json(self):
        return {"word": self.word, "start": self.start, "end": self.end, "conf": self.conf}


@dataclass(frozen=True)
class Transcript:
    text: str
    duration_sec: float
    engine: str
    model: str
    language: str
    words: list = field(default_factory=list)

    def as_json(self):
        return {
            "text": self.text,
            "words": [word.as_json() for word in self.words],
            "durationSec": round(self.duration_sec, 2),
            "engine": self.engine,
            "model": self.model,
            "language": self.language,
        }


def checked_language(language):
    """`language`, or the default when None; InvalidLanguage when malformed."""
    if language is None:
        return DEFAULT_LANGUAGE
    if not isinstance(language, str) or not LANGUAGE_PATTERN.match(language):
        raise InvalidLanguage(details={"language": [InvalidLanguage.message]})
    return language


def model_name(path):
    """A readable model name: the model's directory (or its package, for `…/model`)."""
    path = Path(path)
    return path.parent.name if path.name == "model" else path.name


class VoskRecognizer:
    id, name, engine, mode = "vosk", "Vosk", "vosk", "offline"

    def __init__(self):
        self._models = {}  # path -> vosk.Model
        self._lock = threading.Lock()

    def configured_languages(self):
        return tuple(sorted(settings.VOSK_MODELS))

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

    def transcribe(self, pcm, *, language, phrases=None):
        """A Transcript of 16 kHz mono PCM; `phrases` restricts recognition to them."""
        import vosk

        model = self.model_for(language)
        if phrases:
            # Vosk needs the grammar as real UTF-8 text: with escaped non-ASCII
            # characters (ensure_ascii) it silently recognises nothing.
            recognizer = vosk.KaldiRecognizer(model, SAMPLE_RATE, json.dumps(phrases, ensure_ascii=False))
        else:
            recognizer = vosk.KaldiRecognizer(model, SAMPLE_RATE)
        recognizer.SetWords(True)
        results = []
        for offset in range(0, len(pcm), _CHUNK_BYTES):
            if recognizer.AcceptWaveform(pcm[offset:offset + _CHUNK_BYTES]):
                results.append(json.loads(recognizer.Result()))
        results.append(json.loads(recognizer.FinalResult()))
        words = [
            Word(word=item["word"], start=round(item["start"], 2), end=round(item["end"], 2),
                 conf=round(item["conf"], 3))
            for result in results for item in result.get("result", [])
        ]
        return Transcript(
            text=" ".join(result["text"] for result in results if result.get("text")),
            words=words,
            duration_sec=len(pcm) / 2 / SAMPLE_RATE,
            engine=self.engine,
            model=model_name(settings.VOSK_MODELS[language]),
            language=language,
        )


_recognizer = VoskRecognizer()


def recognizer():
    """The speech recognition engine of this process."""
    return _recognizer
