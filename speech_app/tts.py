"""Speech synthesis behind one small interface.

Views and services only know `Synthesizer` (`synthesizer()` returns the one in use);
another engine (Piper, a hosted API) is one more subclass, chosen in
`synthesizer()`, without touching the views.

The eSpeak NG engine is driven through pyttsx3. Facts about pyttsx3 on this platform
that shape the code: the engine is a process-wide singleton and not thread-safe
(parallel use crashed the process), so every use holds one process-wide lock; on the
first use in a process `runAndWait()` can return before the WAV file is written, so
we wait for the `finished-utterance` event; its output is 16-bit mono PCM at
22,050 Hz; and it concatenates audio buffers quadratically (four times the characters
in one call take several times as long), so long texts are synthesised in pieces.

Every call has a fixed cost and half a second of padding whatever it says, so the
pieces are as long as is still cheap: line breaks are pauses within a sentence, not
calls of their own (2,500 one-word lines were 2,500 calls and 20 minutes of audio),
and short sentences share a call (the measurements: docs/performance-history.md). The audio of one text is capped at ten
minutes and synthesis stops at the first piece past the cap.
"""
import contextlib
import importlib.metadata
import io
import re
import tempfile
import threading
import wave
from abc import abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from django.conf import settings

from speech_app.errors import SpeechTooLong, TtsUnavailable, UnknownVoice
from speech_app.spoken import VERSION as SPOKEN_VERSION
from speech_app.spoken import spoken_form

# A voice is an eSpeak NG voice name, optionally with a variant: `de`, `en-us`, `ko+f3`.
VOICE_PATTERN = re.compile(r"^[A-Za-z0-9_/-]{1,40}(\+[A-Za-z0-9_]{1,20})?$")
# The longest audio synthesised for one text.
MAX_SPEECH_SECONDS = 600
# The longest piece of text given to the engine in one call (see above). One piece of
# the most drawn-out text found (a Han sign per character, for the German voice) is
# about 125 s of audio, so the cap is overshot by at most that before synthesis stops.
MAX_PIECE_CHARS = 500
# Sentence ends (., !, ?, ;, :) followed by whitespace.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?;:])\s+")
# A line that already ends with punctuation (possibly inside closing quotes or brackets).
_PUNCTUATED_END = re.compile(r"[.!?;:,…\-–—][\"'»«“”„)\]]*$")
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
    def duration_sec(self) -> float:
        return len(self.pcm) / 2 / self.sample_rate


class Synthesizer(Protocol):
    """What the rest of the code needs from a speech-synthesis engine (the engines
    subclass it for its defaults; a test's fake engine need not)."""

    id: str  # the engine's id in /health and /v2/meta/engines
    name: str
    engine: str
    mode: str  # "offline" for engines in this process

    @property
    @abstractmethod
    def version(self) -> str:
        """Changes whenever the same text and voice could sound different (cache key)."""

    @abstractmethod
    def synthesize(self, text: str, *, voice: str) -> Speech:
        """`Speech` of `text`; UnknownVoice for a voice the engine does not have."""

    def stream(self, text: str, *, voice: str) -> Iterator[Speech]:
        """`Speech` of `text` sentence by sentence (speech_sentences of its spoken form),
        so that the first sentence can be played while the rest is still being made.
        Engines that can override this; by default the whole text at once."""
        yield self.synthesize(text, voice=voice)

    def serves(self, voice: str) -> bool:
        """Whether `voice` is one of this engine's (an operator's Piper voice is not eSpeak's)."""
        return VOICE_PATTERN.match(voice) is not None

    @staticmethod
    def check_length(samples: int, sample_rate: int) -> None:
        """SpeechTooLong once `samples` at `sample_rate` are past MAX_SPEECH_SECONDS;
        engines call it after every piece, so that synthesis stops there."""
        if samples > MAX_SPEECH_SECONDS * sample_rate:
            raise SpeechTooLong(
                f"The text is more than {MAX_SPEECH_SECONDS} seconds of speech; at most ten minutes of audio are "
                "rendered in one request.", details={"maxSeconds": MAX_SPEECH_SECONDS})

    def check_voice(self, voice: str) -> None:
        if not VOICE_PATTERN.match(voice):
            raise UnknownVoice(f"'{voice[:60]}' is not a voice name such as 'de' or 'ko+f3'.",
                               details={"voice": voice[:60]})


def spoken_text(text, voice):
    """What a voice says for `text`: a German voice (`de`, `de+m3`, `de-DE-…`) hears the
    German normaliser's spoken form (numbers, dates, prices and abbreviations in
    words); other languages the text as it is."""
    if re.match(r"de(?:$|[+_-])", voice, re.IGNORECASE):
        return spoken_form(text)
    return text


def speech_sentences(text):
    """`text` sentence by sentence, as streaming speaks it: line breaks become pauses
    (a comma where the line has no punctuation of its own), and a sentence longer than
    MAX_PIECE_CHARS is cut at a comma or a space."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    lines = [line for line in lines if line]
    spoken = " ".join(line if n == len(lines) - 1 or _PUNCTUATED_END.search(line) else f"{line},"
                      for n, line in enumerate(lines))
    return [part for sentence in _SENTENCE_BREAK.split(spoken) for part in _cut(sentence)]


def speech_pieces(text):
    """`text` as the pieces the engine is called with: its sentences (speech_sentences)
    packed into pieces of at most MAX_PIECE_CHARS."""
    pieces = []
    for part in speech_sentences(text):
        if pieces and len(pieces[-1]) + 1 + len(part) <= MAX_PIECE_CHARS:
            pieces[-1] = f"{pieces[-1]} {part}"
        else:
            pieces.append(part)
    return pieces


def _cut(sentence):
    """`sentence` in parts of at most MAX_PIECE_CHARS, cut after a comma if there is
    one in the second half of a part, else at a space, else anywhere."""
    while len(sentence) > MAX_PIECE_CHARS:
        window = sentence[:MAX_PIECE_CHARS + 1]
        cut = window.rfind(", ") + 1
        if cut <= MAX_PIECE_CHARS // 2:
            cut = window.rfind(" ")
        if cut <= 0:
            cut = MAX_PIECE_CHARS
        yield sentence[:cut].strip()
        sentence = sentence[cut:].strip()
    if sentence:
        yield sentence


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
    def version(self) -> str:
        # How a text is cut into pieces changes how it sounds (pauses between calls).
        return (f"espeak-ng-{self._library_version()}/pyttsx3-{importlib.metadata.version('pyttsx3')}"
                f"/pieces-{MAX_PIECE_CHARS}/{SPOKEN_VERSION}")

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

    def synthesize(self, text: str, *, voice: str) -> Speech:
        self.check_voice(voice)
        return self._speak(speech_pieces(spoken_text(text, voice)), voice)

    def stream(self, text: str, *, voice: str) -> Iterator[Speech]:
        self.check_voice(voice)
        # Normalised first: a sentence break is only one in the spoken form ("z. B.").
        for sentence in speech_sentences(spoken_text(text, voice)):
            yield self._speak([sentence], voice)

    def _speak(self, pieces, voice):
        with self._lock:
            engine = self._ensure_engine()
            self._errors.clear()
            engine.setProperty("voice", voice)
            chunks, samples, sample_rate = [], 0, 22050
            for piece in pieces:
                pcm, sample_rate = self._utterance(engine, piece)
                if self._errors:
                    raise UnknownVoice(f"eSpeak NG has no voice '{voice}'.", details={"voice": voice})
                chunks.append(pcm)
                samples += len(pcm) // 2
                self.check_length(samples, sample_rate)
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
