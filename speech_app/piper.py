"""Piper voices an operator brings: `PIPER_VOICES=name=/srv/voices/de_DE-thorsten-high.onnx,…`.

No German neural voice can be installed from the package registries, so the natural
voice a German business expects is a Piper voice file the operator puts on the
server (the `.onnx` and its `.onnx.json` beside it). Each configured voice is a voice
name like eSpeak's (`thorsten`, or `de` to make it the language's voice), spoken by
the Piper runtime in a process of its own (speech_app/piper_worker.py: the runtime
is GPL-3.0 and never runs in the product's processes), one process per voice, started
at the first synthesis and kept. Requests to one voice take turns; every read from
the process has a deadline, and a process that misses it is killed and started anew.
"""
import hashlib
import json
import os
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from django.conf import settings

from speech_app.errors import TtsUnavailable, UnknownVoice
from speech_app.tts import MAX_PIECE_CHARS, SPOKEN_VERSION, Speech, Synthesizer, speech_sentences, spoken_text

_END, _FAILED = 0, 0xFFFFFFFF
# A sentence of speech is well under a megabyte of PCM; a longer frame is a broken worker.
_MAX_FRAME_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class PiperVoice:
    name: str
    model: Path
    config: Path
    language: str  # "de" of the voice file's "de_DE"
    sample_rate: int

    @property
    def fingerprint(self):
        """Changes when the voice file is replaced under the same name (cache key)."""
        stat = self.model.stat()
        return f"{self.name}:{stat.st_size}:{int(stat.st_mtime)}"


class PiperConfigError(ValueError):
    pass


def parse_voices(value):
    """`name=path.onnx,…` as {name: PiperVoice}; PiperConfigError saying what is wrong
    (a missing file, a config without its sample rate)."""
    voices = {}
    for item in filter(None, (part.strip() for part in (value or "").split(","))):
        name, sep, path = item.partition("=")
        name, model = name.strip(), Path(path.strip())
        if not sep or not name or not path.strip():
            raise PiperConfigError(f"PIPER_VOICES: '{item}' is not name=/path/to/voice.onnx.")
        config = model.with_name(model.name + ".json")
        for file in (model, config):
            if not file.is_file():
                raise PiperConfigError(f"PIPER_VOICES: voice '{name}': {file} does not exist.")
        try:
            data = json.loads(config.read_text(encoding="utf-8"))
            sample_rate = int(data["audio"]["sample_rate"])
            code = str((data.get("language") or {}).get("code") or data.get("espeak", {}).get("voice", ""))
        except (ValueError, KeyError, TypeError) as exc:
            raise PiperConfigError(f"PIPER_VOICES: voice '{name}': {config} is not a Piper voice config "
                                   f"({exc}).") from None
        voices[name] = PiperVoice(name=name, model=model, config=config, sample_rate=sample_rate,
                                  language=code.replace("-", "_").partition("_")[0].lower())
    return voices


def piper_voices():
    """The configured voices (settings.PIPER_VOICES); {} when none or misconfigured
    (the engine's probe reports the error)."""
    try:
        return _voices(settings.PIPER_VOICES)
    except PiperConfigError:
        return {}


@lru_cache(maxsize=4)
def _voices(value):
    return parse_voices(value)


class PiperProcess:
    """One voice's worker process, one request at a time."""

    def __init__(self, voice):
        self.voice = voice
        self.lock = threading.Lock()
        self.process = None

    def speak(self, text):
        """The PCM of `text`, sentence by sentence as the worker makes it."""
        deadline = time.monotonic() + settings.PIPER_TIMEOUT_SEC
        with self.lock:
            process = self._running()
            try:
                process.stdin.write(json.dumps({"text": text}, ensure_ascii=False).encode() + b"\n")
                process.stdin.flush()
                while True:
                    (length,) = struct.unpack(">I", self._read(4, deadline))
                    if length == _END:
                        return
                    if length == _FAILED:
                        raise TtsUnavailable(f"Piper could not speak the text: {self._line(deadline)[:200]}")
                    if length > _MAX_FRAME_BYTES:
                        raise TtsUnavailable("Piper's worker answered a frame of impossible length.")
                    yield self._read(length, deadline)
            except (OSError, TtsUnavailable):
                self.stop()  # its state is unknown: the next request starts a new one
                raise

    def _running(self):
        if self.process is not None and self.process.poll() is None:
            return self.process
        python = settings.PIPER_PYTHON or sys.executable
        try:
            self.process = subprocess.Popen(
                [python, "-m", "speech_app.piper_worker", str(self.voice.model)], cwd=settings.BASE_DIR,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError as exc:
            raise TtsUnavailable(f"Piper's worker could not start ({exc}); set PIPER_PYTHON to a Python "
                                 "with the piper-tts package.") from None
        hello = json.loads(self._line(time.monotonic() + settings.PIPER_START_TIMEOUT_SEC) or "{}")
        if "sampleRate" not in hello:
            self.stop()
            raise TtsUnavailable(f"Piper voice '{self.voice.name}' is not usable: {hello.get('error', 'no answer')}. "
                                 "Install the optional extra piper (pip install '.[piper]') or set PIPER_PYTHON.")
        return self.process

    def _read(self, count, deadline):
        data = bytearray()
        fd = self.process.stdout.fileno()
        while len(data) < count:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TtsUnavailable(f"Piper did not answer within {settings.PIPER_TIMEOUT_SEC} s.")
            chunk = os.read(fd, count - len(data))
            if not chunk:
                raise TtsUnavailable("Piper's worker ended unexpectedly.")
            data += chunk
        return bytes(data)

    def _line(self, deadline):
        line = bytearray()
        while not line.endswith(b"\n") and len(line) < 65536:
            line += self._read(1, deadline)
        return line.decode("utf-8", "replace").strip()

    def stop(self):
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            for pipe in (self.process.stdin, self.process.stdout):
                pipe.close()
            self.process = None


class PiperSynthesizer(Synthesizer):
    id, name, engine, mode = "piper", "Piper", "piper-tts", "offline"

    def __init__(self):
        self._processes = {}
        self._lock = threading.Lock()

    @property
    def version(self) -> str:
        voices = ",".join(sorted(voice.fingerprint for voice in piper_voices().values()))
        digest = hashlib.sha256(voices.encode()).hexdigest()[:16]
        return f"piper/{digest}/pieces-{MAX_PIECE_CHARS}/{SPOKEN_VERSION}"

    def serves(self, voice: str) -> bool:
        return voice in piper_voices()

    def check_voice(self, voice):
        if voice not in piper_voices():
            raise UnknownVoice(f"No Piper voice '{voice[:60]}' is configured (PIPER_VOICES).",
                               details={"voice": voice[:60]})

    def synthesize(self, text: str, *, voice: str) -> Speech:
        pieces = list(self.stream(text, voice=voice))
        rate = pieces[0].sample_rate if pieces else piper_voices()[voice].sample_rate
        return Speech(pcm=b"".join(piece.pcm for piece in pieces), sample_rate=rate)

    def stream(self, text: str, *, voice: str) -> Iterator[Speech]:
        """Speech sentence by sentence: the first is ready while the rest is still being
        made."""
        self.check_voice(voice)
        spec = piper_voices()[voice]
        process = self._process(spec)
        samples = 0
        for piece in speech_sentences(spoken_text(text, spec.language)):
            pcm = b"".join(process.speak(piece))
            samples += len(pcm) // 2
            self.check_length(samples, spec.sample_rate)
            yield Speech(pcm=pcm, sample_rate=spec.sample_rate)

    def _process(self, voice):
        with self._lock:
            process = self._processes.get(voice.name)
            if process is None or process.voice != voice:
                if process is not None:
                    process.stop()
                process = self._processes[voice.name] = PiperProcess(voice)
            return process


class PiperProbe:
    """/health and /v2/meta/engines: each configured voice, tested once by speaking a
    short sentence (again after a failure, at most every minute)."""

    RETRY_SEC = 60.0

    def __init__(self):
        self._lock = threading.Lock()
        self._answer = None  # (settings value, usable, reason, when)

    def __call__(self):
        from console.engines import EngineStatus

        try:
            voices = _voices(settings.PIPER_VOICES)
            usable, reason = self._tested(voices)
        except PiperConfigError as exc:
            voices, usable, reason = {}, False, str(exc)
        languages = tuple(dict.fromkeys(voice.language for voice in voices.values()))
        return EngineStatus(id=PiperSynthesizer.id, kind="tts", name=PiperSynthesizer.name,
                            engine=PiperSynthesizer.engine, mode=PiperSynthesizer.mode, languages=languages,
                            usable_now=usable, reason=reason)

    def _tested(self, voices):
        from speech_app.tts import synthesizer

        with self._lock:
            kept = self._answer
            if kept and kept[0] == settings.PIPER_VOICES and (kept[1] or time.monotonic() - kept[3] < self.RETRY_SEC):
                return kept[1], kept[2]
            usable, reason = True, ""
            for name in voices:
                try:
                    synthesizer(PiperSynthesizer.id).synthesize("Test.", voice=name)
                except TtsUnavailable as exc:
                    usable, reason = False, f"voice '{name}': {exc.message}"
                    break
            self._answer = (settings.PIPER_VOICES, usable, reason, time.monotonic())
            return usable, reason


piper_status = PiperProbe()


def register_piper_probe():
    """Listed only where an operator configured Piper voices."""
    from console.engines import engine_probes

    if settings.PIPER_VOICES:
        engine_probes.register(PiperSynthesizer.id, piper_status)
