"""What a speech-recognition engine is to the rest of the code: the `Recognizer`
protocol and the `Transcript` it returns. Its own module so that the engines
(`speech_app.stt`'s Vosk, `speech_app.whisper`) share it without importing each other.
The engines subclass it (for its default `hear`); a test's fake engine need not.
"""
from abc import abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

from speech_app.entities import entities

if TYPE_CHECKING:  # stt imports this module
    from speech_app.stt import Deadline

# `"language": "auto"` lets an engine that can (Whisper) detect the language.
AUTO_LANGUAGE = "auto"


@dataclass(frozen=True)
class Word:
    word: str
    start: float
    end: float
    conf: float

    def as_json(self) -> dict[str, Any]:
        return {"word": self.word, "start": self.start, "end": self.end, "conf": self.conf}


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str

    def as_json(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "text": self.text}


@dataclass(frozen=True)
class Transcript:
    text: str
    duration_sec: float
    engine: str
    model: str
    language: str  # the language used: the requested one, or the detected one for "auto"
    words: list[Word] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)

    def as_json(self, *, now: datetime | None = None) -> dict[str, Any]:
        """The transcript's JSON; `now` (an aware datetime on the tenant's clock) resolves
        the relative dates and times among the entities ("morgen um halb drei")."""
        return {
            "text": self.text,
            "words": [word.as_json() for word in self.words],
            "segments": [segment.as_json() for segment in self.segments],
            "durationSec": round(self.duration_sec, 2),
            "engine": self.engine,
            "model": self.model,
            "language": self.language,
            "entities": self.entities(now=now),
        }

    def entities(self, *, now: datetime | None = None) -> list[dict[str, Any]]:
        """Phone numbers, dates, times, amounts and reference numbers in a German text
        (speech_app.entities); none in other languages, whose number words it does not
        read."""
        return entities(self.text, now=now) if self.language == "de" else []


class Recognizer(Protocol):
    """What the rest of the code needs from a speech-recognition engine."""

    id: str  # the engine's id in /health, /v2/meta/engines and registry lane ids
    name: str
    engine: str
    mode: str  # "offline" for engines in this process

    @abstractmethod
    def serves(self, language: str) -> bool:
        """Whether this engine can transcribe `language` (or "auto") here."""

    @abstractmethod
    def transcribe(self, pcm: bytes, *, language: str, phrases: list[str] | None = None,
                   deadline: "Deadline") -> Transcript:
        """A Transcript of 16 kHz mono 16-bit PCM; SttUnavailable or SttBusy (503)."""

    @overload
    def hear(self, pcm: bytes, *, language: str, deadline: "Deadline", draft: Literal[False] = False,
             phrases: list[str] | None = None) -> Transcript:
        ...

    @overload
    def hear(self, pcm: bytes, *, language: str, deadline: "Deadline", draft: bool,
             phrases: list[str] | None = None) -> Transcript | None:
        ...

    def hear(self, pcm: bytes, *, language: str, deadline: "Deadline", draft: bool = False,
             phrases: list[str] | None = None) -> Transcript | None:
        """A Transcript of one utterance of a conversation (the voice agent's, at most
        ~15 s); `phrases` the assistant's vocabulary (a hint: names and terms it should
        hear). A `draft` is a partial transcript while the caller still speaks, which
        an engine may decline (None) when it has no time for it. By default a
        transcription like any other, and no drafts (a remote lane would be asked every
        second; Whisper makes its own cheaply)."""
        if draft:
            return None
        return self.transcribe(pcm, language=language, phrases=phrases or None, deadline=deadline)
