"""Speech synthesis behind one small interface.

Views and services only know `Synthesizer` (`synthesizer()` returns the one in use);
another engine (Piper, a hosted API) is one more subclass, chosen in
`synthesizer()`, without touching the views.

The eSpeak NG engine is driven through pyttsx3. Facts about pyttsx3 on this platform
that shape the code: the engine is a process-wide singleton and not thread-safe
(parallel use crashed the process), so every use holds one process-wide lock; on the
first use in a process `runAndWait()` can return before the WAV file is written, so
we wait for the `finished-utterance` event; its output is 16-bit mono PCM at
22,050 Hz; and it concatenates audio buffers quadratically, so long texts are
synthesised sentence by sentence.
"""
import contextlib
import importlib.metadata
import io
import re
import tempfile
import threading
import wave
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from django.conf import settings

from speech_app.errors import TtsUnavailable, UnknownVoice

# A voice is an eSpeak NG voice name, optionally with a variant: `de`, `en-us`, `ko+f3`.
VOICE_PATTERN = re.compile(r"^[A-Za-z0-9_/-]{1,40}(\+[A-Za-z0-9_]{1,20})?$")
# Sentence ends (., !, ?, ;, :) followed by whitespace, and line breaks.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?;:])\s+|\n+")
# The longest wait for one sentence; eSpeak needs milliseconds, so this only guards
# against a wedged engine.
_UTTERANCE_TIMEOUT_SEC = 30
INSTALL_HINT = "Install eSpeak NG (Debian package libespeak-ng1) and the Python package pyttsx3."


@dataclass(frozen=True)
class Speech:
    """Synthesised audio: 16-bit signed little-endian mono PCM."""

    pcm: bytes
    sample_rate: int

    @property
    def duration_sec(self):
        return len(self.pcm) / 2 / self.sample_rate


class Synthesizer(ABC):
    """What the rest of the code needs from a speech-synthesis engine."""

    id: str  # the engine's id in /health and /v2/meta/engines
    name: str
    engine: str
    mode: str  # "offline" for engines in this process

    @property
    @abstractmethod
    def version(self):
        """Changes whenever the same text and voice could sound different (cache key)."""

    @abstractmethod
    def synthesize(self, text, *, voice):
        """`Speech` of `text`; UnknownVoice for a voice the engine does not have."""

    def check_voice(self, voice):
        if not VOICE_PATTERN.match(voice):
            raise UnknownVoice(f"'{voice[:60]}' is not a voice name such as 'de' or 'ko+f3'.",
                               details={"voice": voice[:60]})


def split_sentences(text):
    return [part.strip() for part in _SENTENCE_BREAK.split(text) if part.strip()]


class EspeakSynthesizer(Synthesizer):
    id, name, engine, mode = "espeak", "eSpeak NG", "espeak-ng", "offline"

    # One lock for the whole process: pyttsx3 keeps one engine per driver and eSpeak
    # itself is a process-wide library.
    _lock = threading.Lock()

    def __init__(self):
        self._engine = None
        self._utterance_done = threading.Event()
        self._errors = []
        self._workdir = None
        self._espeak_version = None

    @property
    def version(self):
        return f"espeak-ng-{self._library_version()}/pyttsx3-{importlib.metadata.version('pyttsx3')}"

    def _library_version(self):
        if self._espeak_version is None:
            with self._lock:
                self._ensure_engine()
                from pyttsx3.drivers import _espeak  # loaded by the engine above

                self._espeak_version = _espeak.Info(None).decode()
        return self._espeak_version

    def _ensure_engine(self):
        """The pyttsx3 engine, created on first use (with the lock held)."""
        if self._engine is None:
            try:
                import pyttsx3

                engine = pyttsx3.init("espeak")
            except (ImportError, OSError, RuntimeError) as exc:
                raise TtsUnavailable(f"Speech synthesis is not available: {exc}. {INSTALL_HINT}") from None
            engine.connect("finished-utterance", self._on_finished)
            # pyttsx3 runs queued commands (such as setting the voice) inside its loop
            # and reports their failures only through this event.
            engine.connect("error", self._on_error)
            self._workdir = Path(tempfile.mkdtemp(prefix="stimmwerk-tts-"))
            self._engine = engine
        return self._engine

    def _on_finished(self, name, completed):
        self._utterance_done.set()

    def _on_error(self, name, exception):
        self._errors.append(exception)

    def synthesize(self, text, *, voice):
        self.check_voice(voice)
        sentences = split_sentences(text)
        with self._lock:
            engine = self._ensure_engine()
            self._errors.clear()
            engine.setProperty("voice", voice)
            chunks, sample_rate = [], 22050
            for sentence in sentences:
                pcm, sample_rate = self._utterance(engine, sentence)
                if self._errors:
                    raise UnknownVoice(f"eSpeak NG has no voice '{voice}'.", details={"voice": voice})
                chunks.append(pcm)
        return Speech(pcm=b"".join(chunks), sample_rate=sample_rate)

    def _utterance(self, engine, sentence):
        """One sentence as (PCM, sample rate), synthesised through a WAV file."""
        path = self._workdir / "utterance.wav"
        path.unlink(missing_ok=True)
        self._utterance_done.clear()
        engine.save_to_file(sentence, str(path))
        # The driver announces every saved file on stdout; keep the server log clean.
        with contextlib.redirect_stdout(io.StringIO()):
            engine.runAndWait()
            if not self._utterance_done.wait(_UTTERANCE_TIMEOUT_SEC):
                raise TtsUnavailable("eSpeak NG did not finish the utterance in time.")
        if not path.exists():
            if self._errors:  # the caller reports the failed command
                return b"", 22050
            raise TtsUnavailable("eSpeak NG wrote no audio.")
        with wave.open(str(path), "rb") as wav:
            return wav.readframes(wav.getnframes()), wav.getframerate()


# This process's synthesis engines, by the id that registry lanes name them with
# (speech_app.services picks one through the registry's router).
SYNTHESIZERS = {"espeak": EspeakSynthesizer}
DEFAULT_SYNTHESIZER = "espeak"


def synthesizer(engine_id=DEFAULT_SYNTHESIZER):
    """The synthesis engine `engine_id` of this process (one instance per process)."""
    return _instance(engine_id)


@lru_cache(maxsize=None)
def _instance(engine_id):
    return SYNTHESIZERS[engine_id]()


def default_voice():
    return settings.SPEECH_DEFAULT_VOICE
