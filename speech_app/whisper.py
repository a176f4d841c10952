"""Speech recognition with Whisper through faster-whisper (CTranslate2), on the CPU.

One model per process, loaded on first use (the engine probe's test transcription
usually does that right after the start) and shared by every request of the process.
Transcriptions run one at a time on a single thread of this engine: with
WHISPER_CPU_THREADS=1 and 2 gunicorn workers on 2 cores, each worker keeps to its
core. The request's thread waits for the result only until its deadline
(`stt.Deadline`); a transcription that cannot finish by then is abandoned — it stops
at its next segment — and the request answers 503 `stt_busy` with Retry-After at
once, so the worker is free again. CTranslate2 cannot be interrupted within a
30-second window, which is why the waiting happens in another thread than the work.
"""
import concurrent.futures
import json
import logging
import os
import threading
import time
from pathlib import Path

from django.conf import settings

from speech_app import whisper_model
from speech_app.decode import SAMPLE_RATE
from speech_app.errors import SttUnavailable
from speech_app.recognition import AUTO_LANGUAGE, Recognizer, Segment, Transcript, Word

# faster-whisper reaches the model hub only for names and missing tokenizers, which
# whisper_model never lets through; this makes sure of it.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

logger = logging.getLogger("speech_app.whisper")
# A failed load is tried again after this long, so that a fixed installation is
# picked up without a restart (and a broken one is not retried on every request).
_RETRY_FAILED_LOAD_SEC = 60
# Transcription is seeded: the same audio always gives the same text, also when
# Whisper falls back to sampling at a higher temperature.
_SEED = 1
# Silence put before and after the audio. Silero VAD cannot see speech in its first
# window, so a clip that starts with a word at 0 s (a trimmed recording, synthetic
# speech) lost its onset: on the eSpeak voicemail set the mean WER fell from 0.41 to
# 0.33 with half a second of padding (docs/performance-history.md). Times are given back
# relative to the audio as sent.
_PAD_SEC = 0.5


class _Abandoned(Exception):
    """The waiting request gave up; the result is not needed any more."""


class _Job:
    def __init__(self, pcm, language, phrases, deadline):
        self.pcm, self.language, self.phrases, self.deadline = pcm, language, phrases, deadline
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

    def serves(self, language):
        return language == AUTO_LANGUAGE or language in self.languages()

    # --- transcription ------------------------------------------------------------
    def transcribe(self, pcm, *, language, phrases=None, deadline):
        """A Transcript of 16 kHz mono PCM; `phrases` become Whisper's hotwords (a hint)."""
        if not self.serves(language):
            raise SttUnavailable(
                f"The Whisper model '{self.model_name}' does not know the language '{language}'. Install a Vosk "
                f"model for it (VOSK_MODELS) or configure a multilingual WHISPER_MODEL.",
                details={"language": language})
        job = _Job(pcm, language, phrases, deadline)
        future = self._executor().submit(self._run, job)
        try:
            return future.result(timeout=deadline.remaining())
        except concurrent.futures.TimeoutError:
            job.abandoned.set()
            future.cancel()  # still queued behind another transcription: never starts
            raise deadline.missed(duration_sec=len(pcm) / 2 / SAMPLE_RATE, done_sec=job.done_sec) from None

    def _executor(self):
        # Created on first use, i.e. in the worker process after gunicorn's fork.
        with self._pool_lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="whisper")
            return self._pool

    def _run(self, job):
        model = self.model()
        if job.abandoned.is_set():
            raise _Abandoned()
        import ctranslate2
        import numpy

        pad = numpy.zeros(int(_PAD_SEC * SAMPLE_RATE), dtype=numpy.float32)
        audio = numpy.concatenate([pad, numpy.frombuffer(job.pcm, dtype="<i2").astype(numpy.float32) / 32768.0, pad])
        ctranslate2.set_random_seed(_SEED)
        segments, info = model.transcribe(
            audio, language=None if job.language == AUTO_LANGUAGE else job.language,
            beam_size=settings.WHISPER_BEAM_SIZE, word_timestamps=True,
            # Silero VAD (shipped inside faster-whisper) hands Whisper only the speech.
            # Without it, silence and noise make Whisper retry every window at higher
            # temperatures: silence cost about two hundred times the CPU (docs/performance-history.md).
            vad_filter=True,
            # Where a window decodes badly Whisper decodes it again at a higher
            # temperature. faster-whisper's default (5 more tries, 5 samples each) cost
            # about twice the CPU of these 2 tries of 2 samples on a badly decoded clip,
            # with the same text on the German voicemail set (docs/performance-history.md).
            temperature=(0.0, 0.4, 0.8), best_of=2,
            # A hint: Whisper sees these words before the audio and prefers them, but
            # may still write anything else (Vosk's grammar allows nothing else).
            hotwords=", ".join(job.phrases) if job.phrases else None)
        collected = []
        for segment in segments:  # each step decodes the next window of audio
            if job.abandoned.is_set():
                raise _Abandoned()
            collected.append(segment)
            job.done_sec = max(0.0, segment.end - _PAD_SEC)
        return self._transcript(collected, info, duration_sec=len(job.pcm) / 2 / SAMPLE_RATE)

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
                            cpu_threads=settings.WHISPER_CPU_THREADS, num_workers=1, local_files_only=True)
