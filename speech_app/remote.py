"""Remote speech lanes as engines: a registry lane in `api` mode that speaks the OpenAI
audio API (speech_app.openai_audio) is a `Synthesizer` or a `Recognizer` like the
engines of this process, so render, transcription and the agent use it unchanged.

- `RemoteSynthesizer` asks for WAV and speaks the German spoken form
  (speech_app.spoken) of the text, one request per piece of at most 500 characters
  (`stream`: per sentence, so the first sentence plays while the rest is made). A
  16-bit mono PCM WAV keeps the server's sample rate; anything else (a server that
  answers MP3 or float WAV whatever was asked) is decoded by speech_app.decode, with
  its limits, to 16 kHz. The voice is the lane's (`params.voices`), chosen when the
  plan is made (speech_app.lanes).
- `RemoteRecognizer` sends the audio as 16 kHz mono WAV and asks for
  `verbose_json`, so the transcript has segments and word times where the server
  gives them (faster-whisper servers do); phrases go as Whisper's `prompt`, a hint.

Each request gets GATEWAY_TIMEOUT_SEC at most, and never more than its caller has
left. Every failure is a `LaneFailure`, which the lane loop turns into the next lane
(and a cooldown when the lane is unwell).
"""
import copy
import hashlib
import io
import json
import math
import struct
import time
import wave
from collections.abc import Iterator

from django.conf import settings

from console.errors import ApiError
from registry_app.lanes.failover import MIN_ATTEMPT_SECONDS, LaneFailure
from speech_app import openai_audio
from speech_app.decode import SAMPLE_RATE, decode_to_pcm
from speech_app.recognition import AUTO_LANGUAGE, Recognizer, Segment, Transcript, Word
from speech_app.stt import LANGUAGE_PATTERN, Deadline
from speech_app.tts import (
    MAX_PIECE_CHARS,
    SPOKEN_VERSION,
    Speech,
    Synthesizer,
    speech_pieces,
    speech_sentences,
    spoken_text,
)

ENGINE = "openai-audio"
# Rates an MP3 can have: a WAV at one of them is kept as it is.
_MP3_RATES = frozenset({8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000})
# Whisper's prompt holds about 224 tokens; phrases beyond this many characters are left out.
MAX_PROMPT_CHARS = 800
# Whisper servers that answer the language's name (OpenAI's "german") rather than its code.
_LANGUAGE_NAMES = {
    "german": "de", "english": "en", "french": "fr", "italian": "it", "spanish": "es", "dutch": "nl",
    "polish": "pl", "turkish": "tr", "russian": "ru", "ukrainian": "uk", "arabic": "ar", "portuguese": "pt",
    "czech": "cs", "danish": "da", "swedish": "sv", "greek": "el", "romanian": "ro", "croatian": "hr",
    "serbian": "sr", "korean": "ko", "japanese": "ja", "chinese": "zh", "vietnamese": "vi", "persian": "fa",
}


def time_left(per_call, ends_by):
    """Seconds one request may take: `per_call`, never past `ends_by` (a monotonic time,
    or None); LaneFailure `timeout` when nothing is left."""
    if ends_by is not None:
        per_call = min(per_call, ends_by - time.monotonic())
    if per_call < MIN_ATTEMPT_SECONDS:
        raise LaneFailure("timeout", "the request's time was used up")
    return per_call


def plain_wav(body):
    """Speech of a 16-bit mono PCM WAV at an MP3 rate, or None for anything else.

    Read by hand rather than with `wave`: a server that streams its WAV writes the
    data chunk's length as 0 or 0xFFFFFFFF (it does not know it yet), which means "up
    to the end"."""
    if len(body) < 12 or body[:4] != b"RIFF" or body[8:12] != b"WAVE":
        return None
    offset, rate = 12, None
    while offset + 8 <= len(body):
        name, size = body[offset:offset + 4], struct.unpack("<I", body[offset + 4:offset + 8])[0]
        start = offset + 8
        if name == b"fmt ":
            if size < 16 or start + 16 > len(body):
                return None
            fmt, channels, rate, _, _, bits = struct.unpack("<HHIIHH", body[start:start + 16])
            if fmt != 1 or channels != 1 or bits != 16 or rate not in _MP3_RATES:
                return None
        elif name == b"data":
            if rate is None:
                return None
            end = start + size if 0 < size <= len(body) - start else len(body)
            pcm = body[start:end]
            return Speech(pcm=pcm[:len(pcm) - len(pcm) % 2], sample_rate=rate)
        offset = start + size + size % 2
    return None


def speech_from_audio(body):
    """The Speech in a server's audio answer; LaneFailure `bad_response` when there is none."""
    speech = plain_wav(body)
    if speech is None:
        try:
            speech = Speech(pcm=decode_to_pcm(body).pcm, sample_rate=SAMPLE_RATE)
        except ApiError as exc:
            raise LaneFailure("bad_response", f"the answer is not usable audio: {exc.message}") from None
    if not speech.pcm:
        raise LaneFailure("bad_response", "the answer has no audio")
    return speech


class RemoteSynthesizer(Synthesizer):
    """A tts lane in `api` mode, speaking with the voice its plan chose."""

    engine, mode = ENGINE, "api"

    def __init__(self, lane, *, endpoint, key, model, voice, language):
        self.lane, self.id, self.name = lane, lane.id, lane.entry.get("name") or lane.id
        self.endpoint, self.key, self.model, self.voice, self.language = endpoint, key, model, voice, language
        self.per_call, self.ends_by = settings.GATEWAY_TIMEOUT_SEC, None

    @property
    def version(self) -> str:
        digest = hashlib.sha256(json.dumps([self.endpoint, self.model, self.voice]).encode()).hexdigest()[:16]
        return f"{ENGINE}/{self.id}/{digest}/pieces-{MAX_PIECE_CHARS}/{SPOKEN_VERSION}"

    def within(self, per_call, ends_by=None):
        """This engine with each request bounded by `per_call` seconds and all of them
        by `ends_by` (a monotonic time, or None)."""
        bounded = copy.copy(self)
        bounded.per_call, bounded.ends_by = per_call, ends_by
        return bounded

    def serves(self, voice: str) -> bool:
        return True  # the plan chose this lane for the voice

    def check_voice(self, voice):
        pass

    def synthesize(self, text: str, *, voice: str | None = None) -> Speech:
        pieces, samples = [], 0
        for piece in speech_pieces(spoken_text(text, self.language)):
            pieces.append(self._speak(piece))
            samples += len(pieces[-1].pcm) // 2
            self.check_length(samples, pieces[0].sample_rate)
        rates = {piece.sample_rate for piece in pieces}
        if len(rates) > 1:
            raise LaneFailure("bad_response", f"the pieces came back at different sample rates {sorted(rates)}")
        return Speech(pcm=b"".join(piece.pcm for piece in pieces), sample_rate=rates.pop() if rates else SAMPLE_RATE)

    def stream(self, text: str, *, voice: str | None = None) -> Iterator[Speech]:
        samples = 0
        for sentence in speech_sentences(spoken_text(text, self.language)):
            speech = self._speak(sentence)
            samples += len(speech.pcm) // 2
            self.check_length(samples, speech.sample_rate)
            yield speech

    def _speak(self, text):
        audio, _ = openai_audio.speech(endpoint=self.endpoint, key=self.key, model=self.model, text=text,
                                       voice=self.voice, timeout=time_left(self.per_call, self.ends_by))
        return speech_from_audio(audio)


def wav_from_pcm(pcm, sample_rate=SAMPLE_RATE):
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(sample_rate)
        wav.writeframes(pcm)
    return out.getvalue()


def prompt_of(phrases):
    """Whisper's prompt: the phrases, comma-separated, as many whole ones as fit."""
    prompt = ""
    for phrase in phrases or ():
        joined = f"{prompt}, {phrase}" if prompt else phrase
        if len(joined) > MAX_PROMPT_CHARS:
            break
        prompt = joined
    return prompt


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _segments(data):
    return [item for item in data.get("segments") or () if isinstance(item, dict)
            and _number(item.get("start")) and _number(item.get("end")) and isinstance(item.get("text"), str)]


def _words(data, segments):
    """Word(…)s of the answer (top-level `words`, else the segments' own), each with the
    server's probability, else its segment's (exp of avg_logprob), else 1.0."""
    listed = data.get("words")
    if not isinstance(listed, list):
        listed = [word for segment in segments for word in segment.get("words") or ()]
    words = []
    for item in listed:
        if not (isinstance(item, dict) and isinstance(item.get("word"), str) and _number(item.get("start"))
                and _number(item.get("end"))):
            continue
        conf = item.get("probability")
        if not _number(conf):
            around = next((s for s in segments if s["start"] <= item["start"] <= s["end"]), None)
            logprob = around.get("avg_logprob") if around else None
            conf = math.exp(min(logprob, 0.0)) if _number(logprob) else 1.0
        words.append(Word(word=item["word"].strip(), start=round(item["start"], 2), end=round(item["end"], 2),
                          conf=round(min(max(conf, 0.0), 1.0), 3)))
    return words


def _language(answered, requested):
    if isinstance(answered, str):
        answered = answered.strip().lower()
        if LANGUAGE_PATTERN.match(answered):
            return answered
        if answered in _LANGUAGE_NAMES:
            return _LANGUAGE_NAMES[answered]
    return requested


class RemoteRecognizer(Recognizer):
    """An stt lane in `api` mode."""

    engine, mode = ENGINE, "api"

    def __init__(self, lane, *, endpoint, key, model):
        self.lane, self.id, self.name = lane, lane.id, lane.entry.get("name") or lane.id
        self.endpoint, self.key, self.model = endpoint, key, model

    def serves(self, language: str) -> bool:
        return language == AUTO_LANGUAGE or self.lane.speaks(language)

    def transcribe(self, pcm: bytes, *, language: str, phrases: list[str] | None = None,
                   deadline: Deadline) -> Transcript:
        timeout = time_left(settings.GATEWAY_TIMEOUT_SEC, time.monotonic() + deadline.remaining())
        data = openai_audio.transcription(
            endpoint=self.endpoint, key=self.key, model=self.model, wav=wav_from_pcm(pcm),
            language=None if language == AUTO_LANGUAGE else language, prompt=prompt_of(phrases), timeout=timeout)
        segments = _segments(data)
        return Transcript(
            text=data["text"].strip(),
            words=_words(data, segments),
            segments=[Segment(start=round(s["start"], 2), end=round(s["end"], 2), text=s["text"].strip())
                      for s in segments],
            duration_sec=len(pcm) / 2 / SAMPLE_RATE,
            engine=self.engine,
            model=self.model,
            language=_language(data.get("language"), language),
        )
