"""Speech recognition with Whisper through faster-whisper (CTranslate2), on the CPU.

One model per process, loaded on first use (the engine probe's test transcription
usually does that right after the start) and shared by every request of the process.
It runs WHISPER_ENGINES transcriptions at the same time (CTranslate2 workers sharing
the weights), each on WHISPER_CPU_THREADS threads: by default one per core, so the
voice agent's sessions, which all live in the one ASGI process, do not wait for each
other's recognition, and the cores are not oversubscribed (a gunicorn sync worker only
ever has one request, so it uses one of them). The request's thread waits for the
result only until its deadline (`stt.Deadline`); a transcription that cannot finish by
then is abandoned — it stops at its next segment — and the request answers 503
`stt_busy` with Retry-After at once, so the worker is free again. CTranslate2 cannot
be interrupted within a 30-second window, which is why the waiting happens in another
thread than the work.

The voice agent's utterances (`hear`, at most 15 s each) are recognised on a window
sized to them instead of Whisper's 30 s: the encoder's cost grows faster than its
input (3,000 frames cost 0.84 CPU s here, 1,000 frames 0.12 s), and a 3 s utterance
padded to 30 s spent most of a second on nothing. The audio goes through the same
Silero filter as transcribe(), its log-mel is padded with zeros as faster-whisper pads
every window, but only to the utterance plus a margin and at least _WINDOW_MIN_SEC;
no word timestamps (their alignment cost another 0.5 s). A window cut to the speech
alone made the decoder run on ("Können Sie mich bitte morgen zurückrufen? Können Sie
mich …"), so the decode is bounded by the audio's length, segments that start after
the speech or repeat an earlier one are dropped, and a decode that loops is tried
again with repetitions penalised. docs/performance.md has the measurements, and
tests/speech_app/test_sized_window.py holds the word error rate to 1.1× the full
window's.
"""
import concurrent.futures
import json
import logging
import os
import re
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings

from speech_app import whisper_model
from speech_app.decode import SAMPLE_RATE
from speech_app.errors import SttUnavailable
from speech_app.recognition import AUTO_LANGUAGE, Recognizer, Segment, Transcript, Word

if TYPE_CHECKING:  # stt imports this module when Whisper is used
    from speech_app.stt import Deadline

# faster-whisper reaches the model hub only for names and missing tokenizers, which
# whisper_model never lets through; this makes sure of it.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

logger = logging.getLogger("speech_app.whisper")
# Tokens of an utterance's vocabulary before its audio (Whisper's context is 448, half
# of it for the previous text).
_HINT_TOKENS = 120
# A failed load is tried again after this long, so that a fixed installation is
# picked up without a restart (and a broken one is not retried on every request).
_RETRY_FAILED_LOAD_SEC = 60
# Whisper's own checks of a decoded window (faster-whisper's defaults): a window whose
# text compresses better than this repeats itself; one below this mean log-probability
# per token is a guess.
_MAX_COMPRESSION_RATIO, _MIN_AVG_LOGPROB = 2.4, -1.0
# Silence put before and after the audio. Silero VAD cannot see speech in its first
# window, so a clip that starts with a word at 0 s (a trimmed recording, synthetic
# speech) lost its onset: on the eSpeak voicemail set the mean WER fell from 0.41 to
# 0.33 with half a second of padding (docs/performance-history.md). Times are given back
# relative to the audio as sent.
_PAD_SEC = 0.5
# The sized window of an utterance (`hear`): the speech as the filter left it, then
# _WINDOW_MARGIN_SEC of zeros, and never shorter than _WINDOW_MIN_SEC in all. Whisper
# was trained on 30 s windows; floors of 0, 10, 15, 20 and 30 s were measured on the
# German sets (docs/performance.md): below 10 s the decoder lost more words, above it
# the differences were within the noise of the sets, at up to 1.6× the cost.
_WINDOW_MIN_SEC = 10.0
_WINDOW_MARGIN_SEC = 1.0
_FULL_WINDOW_FRAMES = 3000  # 100 feature frames a second
# The decode of an utterance stops after this many tokens per second of audio (German
# speech is 5-7, with timestamps and digits' commas up to 9), plus a few.
_TOKENS_PER_SEC, _TOKENS_EXTRA = 10, 12
# A segment that starts this close to the end of the speech (or later) is Whisper
# running on into the silence.
_LATE_SEGMENT_SEC = 0.1
# A decode that looped (or failed Whisper's checks, in transcribe) is tried once more
# with repeated tokens penalised. Not Whisper's fallback of sampling at a higher temperature: CTranslate2
# seeds its sampler once per thread, so a sampled text depended on what the engine had
# heard before (the same audio gave different text in different test orders).
_LOOP_RETRY = {"repetition_penalty": 1.2}
_WORD = re.compile(r"[^\W_]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# Words that may well come three times in a row (digits of a phone number).
_COUNTED_WORDS = frozenset("null eins zwei zwo drei vier fünf sechs sieben acht neun zehn ja nein".split())


class _Abandoned(Exception):
    """The waiting request gave up; the result is not needed any more."""


class _Job:
    def __init__(self, pcm, language, phrases, deadline, draft=False):
        self.pcm, self.language, self.phrases, self.deadline = pcm, language, phrases, deadline
        self.draft = draft
        self.abandoned = threading.Event()
        self.done_sec = 0.0


class WhisperRecognizer(Recognizer):
    id, name, engine, mode = "whisper", "Whisper", "faster-whisper", "offline"

    def __init__(self, sources=whisper_model.bundled_sources):
        self._sources = sources  # the bundled model's files (tests pass damaged copies)
        self._load_lock = threading.Lock()
        self._model = None
        self._failure = None  # (reason, monotonic time of the attempt)
        self._pool_lock = threading.Lock()
        self._pool = None
        self._busy = 0  # transcriptions submitted and not finished (drafts wait for none)
        self._languages = None  # (WHISPER_MODEL, languages), read once per setting

    # --- what the engine offers -------------------------------------------------
    @property
    def model_name(self):
        return whisper_model.model_name(settings.WHISPER_MODEL)

    @property
    def loaded(self):
        return self._model is not None

    def failure(self):
        """Why the model could not be loaded last time, or None."""
        return self._failure[0] if self._failure else None

    def languages(self):
        """The languages of the configured model (multilingual: Whisper's hundred)."""
        if self._languages is None or self._languages[0] != settings.WHISPER_MODEL:
            from faster_whisper.tokenizer import _LANGUAGE_CODES

            self._languages = (settings.WHISPER_MODEL,
                               tuple(sorted(_LANGUAGE_CODES)) if self._multilingual() else ("en",))
        return self._languages[1]

    def _multilingual(self):
        if settings.WHISPER_MODEL == whisper_model.BUNDLED:
            return True
        try:
            config = json.loads((Path(settings.WHISPER_MODEL) / "config.json").read_text())
        except (OSError, ValueError):
            return True  # the load reports the problem
        return len(config.get("lang_ids") or ()) > 1

    def serves(self, language: str) -> bool:
        return language == AUTO_LANGUAGE or language in self.languages()

    # --- transcription ------------------------------------------------------------
    def transcribe(self, pcm: bytes, *, language: str, phrases: list[str] | None = None,
                   deadline: "Deadline") -> Transcript:
        """A Transcript of 16 kHz mono PCM; `phrases` become Whisper's hotwords (a hint)."""
        self._check_language(language)
        return self._wait(self._submit(self._run, _Job(pcm, language, phrases, deadline)))

    def hear(self, pcm, *, language, deadline, draft=False, phrases=None):
        """An utterance of a conversation (16 kHz mono PCM, at most ~15 s), recognised on a
        window sized to it (see the module doc); `phrases` (the assistant's vocabulary)
        are Whisper's prompt, as faster-whisper's hotwords are. A `draft` (a partial
        transcript while the caller still speaks) is greedy and never waits for an
        engine: None when all are busy."""
        self._check_language(language)
        with self._pool_lock:
            # A draft takes an engine only while another one stays free for a turn's recognition.
            if draft and self._busy >= max(1, settings.WHISPER_ENGINES - 1):
                return None
        return self._wait(self._submit(self._run_utterance, _Job(pcm, language, phrases or None, deadline,
                                                                 draft=draft)))

    def _check_language(self, language):
        if not self.serves(language):
            raise SttUnavailable(
                f"The Whisper model '{self.model_name}' does not know the language '{language}'. Install a Vosk "
                f"model for it (VOSK_MODELS) or configure a multilingual WHISPER_MODEL.",
                details={"language": language})

    def _submit(self, work, job):
        executor = self._executor()
        with self._pool_lock:
            self._busy += 1
        try:
            future = executor.submit(work, job)
        except BaseException:
            self._finished(None)
            raise
        future.add_done_callback(self._finished)
        return job, future

    def _finished(self, future):
        with self._pool_lock:
            self._busy -= 1

    def _wait(self, submitted):
        job, future = submitted
        try:
            return future.result(timeout=job.deadline.remaining())
        except concurrent.futures.TimeoutError:
            job.abandoned.set()
            future.cancel()  # still queued behind other transcriptions: never starts
            raise job.deadline.missed(duration_sec=len(job.pcm) / 2 / SAMPLE_RATE, done_sec=job.done_sec) from None

    def _executor(self):
        # Created on first use, i.e. in the worker process after gunicorn's fork.
        with self._pool_lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=settings.WHISPER_ENGINES,
                                                                   thread_name_prefix="whisper")
            return self._pool

    def _run(self, job):
        model = self.model()
        if job.abandoned.is_set():
            raise _Abandoned()
        import numpy

        pad = numpy.zeros(int(_PAD_SEC * SAMPLE_RATE), dtype=numpy.float32)
        audio = numpy.concatenate([pad, numpy.frombuffer(job.pcm, dtype="<i2").astype(numpy.float32) / 32768.0, pad])
        # Phrases are a hint: Whisper sees them before the audio and prefers them, but may
        # still write anything else (Vosk's grammar allows nothing else). A hint can also
        # lead it astray ("ja, nein" made Whisper base run on "… ja nicht so gut, dass es
        # nicht so gut ist, …"), and a poor recording can make it loop ("Die S-1-1-1-…"
        # on the phone band): a decode that fails Whisper's own checks is done again
        # without the hint and with repetitions penalised (_LOOP_RETRY).
        collected, info = self._decode(model, audio, job, hotwords=", ".join(job.phrases) if job.phrases else None)
        if any(_misdecoded(segment) for segment in collected):
            collected, info = self._decode(model, audio, job, hotwords=None, **_LOOP_RETRY)
        return self._transcript(collected, info, duration_sec=len(job.pcm) / 2 / SAMPLE_RATE)

    def _decode(self, model, audio, job, *, hotwords, repetition_penalty=1.0):
        segments, info = model.transcribe(
            audio, language=None if job.language == AUTO_LANGUAGE else job.language,
            beam_size=settings.WHISPER_BEAM_SIZE, word_timestamps=True,
            # Silero VAD (shipped inside faster-whisper) hands Whisper only the speech.
            # Without it Whisper decoded silence and noise window by window (then with its
            # temperature retries): about two hundred times the CPU (docs/performance-history.md).
            vad_filter=True,
            # Beam search only, no fallback to sampling at higher temperatures: the same
            # audio gives the same text (see _LOOP_RETRY). On the German voicemail set the
            # fallback never changed a word (docs/performance.md, "Whisper").
            temperature=0.0, hotwords=hotwords, repetition_penalty=repetition_penalty)
        collected = []
        for segment in segments:  # each step decodes the next window of audio
            if job.abandoned.is_set():
                raise _Abandoned()
            collected.append(segment)
            job.done_sec = max(0.0, segment.end - _PAD_SEC)
        return collected, info

    def _run_utterance(self, job):
        """The sized window's recognition (see the module doc): one encoder pass over the
        speech and its margin, then a decode bounded by the speech's length."""
        model = self.model()
        if job.abandoned.is_set():
            raise _Abandoned()
        import ctranslate2
        import numpy
        from faster_whisper.tokenizer import Tokenizer
        from faster_whisper.vad import VadOptions, collect_chunks, get_speech_timestamps

        speech_sec = len(job.pcm) / 2 / SAMPLE_RATE
        pad = numpy.zeros(int(_PAD_SEC * SAMPLE_RATE), dtype=numpy.float32)
        audio = numpy.concatenate([pad, numpy.frombuffer(job.pcm, dtype="<i2").astype(numpy.float32) / 32768.0, pad])
        # As transcribe() does: Silero VAD hands Whisper the speech with 0.4 s around it.
        chunks = get_speech_timestamps(audio, VadOptions())
        if not chunks:
            return Transcript(text="", words=[], segments=[], duration_sec=speech_sec, engine=self.engine,
                              model=self.model_name, language=job.language)
        audio = numpy.concatenate(collect_chunks(audio, chunks)[0])
        heard_sec = len(audio) / SAMPLE_RATE
        # The log-mel of that, then zeros up to the window, as faster-whisper pads its 30 s
        # windows; a draft (only a preview) without the floor.
        features = model.feature_extractor(audio)[:, :-1]
        floor = 0 if job.draft else int(_WINDOW_MIN_SEC * 100)
        frames = min(_FULL_WINDOW_FRAMES, max(features.shape[1] + int(_WINDOW_MARGIN_SEC * 100), floor))
        frames += frames % 2  # the encoder halves the frames
        features = numpy.pad(features[:, :frames], ((0, 0), (0, frames - min(frames, features.shape[1]))))
        encoded = model.model.encode(ctranslate2.StorageView.from_array(numpy.ascontiguousarray(features[None])),
                                     to_cpu=False)
        language = job.language
        if language == AUTO_LANGUAGE:
            language = model.model.detect_language(encoded)[0][0][0][2:-2]
        tokenizer = Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language=language)
        text = ""
        # The vocabulary goes before the audio as the previous text, as faster-whisper
        # puts its hotwords (and as _run does): the retry of a decode that loops goes
        # without it.
        for hint, retry in (((job.phrases, None),) if job.draft else ((job.phrases, None), (None, _LOOP_RETRY))):
            if job.abandoned.is_set():
                raise _Abandoned()
            prompt = _prompt(tokenizer, hint)
            max_length = len(prompt) + int(_TOKENS_PER_SEC * heard_sec) + _TOKENS_EXTRA
            result = model.model.generate(encoded, [prompt], max_length=max_length, suppress_blank=True,
                                          suppress_tokens=[-1], beam_size=1 if job.draft else settings.WHISPER_BEAM_SIZE,
                                          **(retry or {}))[0]
            text = _spoken_segments(result.sequences_ids[0], tokenizer, speech_end=heard_sec)
            if not _loops(text):
                break
        else:
            text = _without_loops(text)
        job.done_sec = speech_sec
        segments = [Segment(start=0.0, end=round(speech_sec, 2), text=text)] if text else []
        return Transcript(text=text, words=[], segments=segments, duration_sec=speech_sec, engine=self.engine,
                          model=self.model_name, language=language)

    def _transcript(self, segments, info, *, duration_sec):
        def at(seconds):
            """A time of the padded audio as a time of the audio sent (a plain float, not numpy's)."""
            return round(min(max(float(seconds) - _PAD_SEC, 0.0), duration_sec), 2)

        words = [
            Word(word=word.word.strip(), start=at(word.start), end=at(word.end), conf=round(float(word.probability), 3))
            for segment in segments for word in (segment.words or ()) if word.word.strip()
        ]
        parts = [Segment(start=at(s.start), end=at(s.end), text=s.text.strip()) for s in segments if s.text.strip()]
        return Transcript(text=" ".join(part.text for part in parts), words=words, segments=parts,
                          duration_sec=duration_sec, engine=self.engine, model=self.model_name,
                          language=info.language)

    # --- the model ----------------------------------------------------------------
    def model(self):
        """The loaded faster-whisper model (verified, loaded once), or SttUnavailable."""
        if self._model is not None:
            return self._model
        with self._load_lock:
            if self._model is not None:
                return self._model
            if self._failure and time.monotonic() - self._failure[1] < _RETRY_FAILED_LOAD_SEC:
                raise SttUnavailable(self._failure[0])
            try:
                directory = whisper_model.model_directory(settings.WHISPER_MODEL, settings.VAR_DIR, self._sources)
                started = time.monotonic()
                self._model = self._construct(directory)
                logger.info("Loaded the Whisper model %s (%s, %d thread(s)) in %.1f s.", self.model_name,
                            settings.WHISPER_COMPUTE_TYPE, settings.WHISPER_CPU_THREADS, time.monotonic() - started)
            except whisper_model.ModelUnavailable as exc:
                self._failure = (str(exc), time.monotonic())
                logger.error("Whisper is not usable: %s", exc)
                raise SttUnavailable(str(exc)) from None
            except (RuntimeError, ValueError, OSError) as exc:  # CTranslate2's errors for a bad model
                self._failure = (f"The Whisper model '{self.model_name}' could not be loaded: {exc}",
                                 time.monotonic())
                logger.error("Whisper is not usable: %s", self._failure[0])
                raise SttUnavailable(self._failure[0]) from None
            self._failure = None
            return self._model

    @staticmethod
    def _construct(directory):
        """The model of a verified directory (the only place that loads weights)."""
        from faster_whisper import WhisperModel

        return WhisperModel(str(directory), device="cpu", compute_type=settings.WHISPER_COMPUTE_TYPE,
                            cpu_threads=settings.WHISPER_CPU_THREADS, num_workers=settings.WHISPER_ENGINES,
                            local_files_only=True)


def _prompt(tokenizer, phrases):
    """The decoder's prompt: the phrases (comma-separated, at most _HINT_TOKENS tokens)
    as the previous text, then the start of the transcript."""
    if not phrases:
        return list(tokenizer.sot_sequence)
    hint = tokenizer.encode(" " + ", ".join(phrases))[:_HINT_TOKENS]
    return [tokenizer.sot_prev, *hint, *tokenizer.sot_sequence]


def _spoken_segments(tokens, tokenizer, *, speech_end):
    """The text of a decode with timestamps, segment by segment, without what Whisper
    made up after the speech: a segment that starts at its end or later, and a segment
    that repeats an earlier one (the decoder starting the utterance over)."""
    segments, current, start = [], [], None
    for token in tokens:
        if token >= tokenizer.timestamp_begin:
            at = (token - tokenizer.timestamp_begin) * 0.02
            if start is None:
                start = at
            else:
                segments.append((start, current))
                current, start = [], None
        elif token < tokenizer.eot:
            current.append(token)
    if current:  # cut by the length bound: kept only if it began within the speech
        segments.append((start or 0.0, current))
    kept, seen = [], []
    for start, segment in segments:
        if start >= speech_end - _LATE_SEGMENT_SEC:
            break
        text = tokenizer.decode(segment).strip()
        words = _words(text)
        if not words:
            continue
        if any(words == earlier[:len(words)] or earlier == words[:len(earlier)] for earlier in seen):
            break
        seen.append(words)
        kept.append(text)
    return _without_repeated_sentences(" ".join(kept))


def _words(text):
    return [word.lower() for word in _WORD.findall(text)]


def _without_repeated_sentences(text):
    """`text` up to a sentence that starts like an earlier one (its first three words)."""
    sentences = _SENTENCE_END.split(text)
    openings = []
    for index, sentence in enumerate(sentences):
        opening = _words(sentence)[:3]
        if len(opening) == 3 and opening in openings:
            return " ".join(sentences[:index])
        openings.append(opening)
    return text


def _loop_at(words):
    """(start, length) of the first run of a phrase said three times in a row (a decoder
    stuck in a loop: "mein Name, mein Name, mein Name"), or None. Digits and number
    words may repeat (a phone number)."""
    for length in range(1, 7):
        for start in range(len(words) - 3 * length + 1):
            phrase = words[start:start + length]
            if all(word.isdigit() or word in _COUNTED_WORDS for word in phrase):
                continue
            if phrase == words[start + length:start + 2 * length] == words[start + 2 * length:start + 3 * length]:
                return start, length
    return None


def _misdecoded(segment):
    return segment.compression_ratio > _MAX_COMPRESSION_RATIO or segment.avg_logprob < _MIN_AVG_LOGPROB


def _loops(text):
    return _loop_at(_words(text)) is not None


def _without_loops(text):
    """`text` cut after the first time its loop's phrase was said (the last resort, when
    the retry looped too)."""
    found = _loop_at(_words(text))
    if found is None:
        return text
    start, length = found
    matches = list(_WORD.finditer(text))
    return text[:matches[start + length - 1].end()].strip()
