"""The speech the tests hear, the same in every run: each sentence is synthesised once per
test run, by the product's eSpeak NG synthesis in a fresh state, and kept in a directory
all of the run's processes share (pytest-xdist's workers too).

Why: eSpeak NG's samples depend on what the process synthesised before (its wave
generator keeps a pitch-flutter position in a static variable that no call resets), so
a sentence sounded a little different with each test order, and a recognition near its
bound passed in one run and failed in the next (issue 34). A synthesis in a process that
has synthesised nothing yet is the same every time: one helper process per test process
(`python -m tests.speech_app.synthesis`) sets Django up once, never synthesises itself,
and forks a child for each sentence, which speaks it into the cache and exits.
"""
import atexit
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback
import wave
from pathlib import Path
from typing import IO

from speech_app.tts import Speech

ROOT = Path(__file__).resolve().parents[2]
# Set by tests/conftest.py for the whole run (its workers inherit it); a process
# without it (a test module run on its own) keeps a directory of its own.
DIRECTORY_VARIABLE = "STIMMWERK_TEST_SPEECH_DIR"
_TIMEOUT_SEC = 120


class _Synthesiser:
    """This process's helper: started on the first sentence not yet in the cache."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: subprocess.Popen[str] | None = None

    def speak(self, text: str, voice: str, path: Path) -> None:
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                env = {**os.environ, "DJANGO_SETTINGS_MODULE": "console.settings_test"}
                self.process = subprocess.Popen([sys.executable, "-m", "tests.speech_app.synthesis"], cwd=ROOT,
                                                env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            stdin, stdout = self.process.stdin, self.process.stdout
            assert stdin is not None and stdout is not None
            stdin.write(json.dumps({"text": text, "voice": voice, "path": str(path)}) + "\n")
            stdin.flush()
            answer = _line_within(stdout, _TIMEOUT_SEC)
        if answer != "ok":
            raise RuntimeError(f"the test speech helper could not speak {text!r} ({voice}): {answer or 'no answer'}")


def _line_within(stream: IO[str], seconds: float) -> str:
    """The next line of `stream`, or "" when none came within `seconds`."""
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(seconds)
    return line[0].strip() if line else ""


_synthesiser = _Synthesiser()
_own_directory: list[Path] = []


def _directory() -> Path:
    shared = os.environ.get(DIRECTORY_VARIABLE)
    if shared:
        return Path(shared)
    if not _own_directory:
        _own_directory.append(Path(tempfile.mkdtemp(prefix="stimmwerk-test-speech-")))
        atexit.register(shutil.rmtree, _own_directory[0], ignore_errors=True)
    return _own_directory[0]


def synthesised(text: str, *, voice: str) -> Speech:
    """`text` spoken by the product's eSpeak NG synthesis in `voice`: the same samples in
    every test and every run (synthesised once per run, in a fresh engine)."""
    key = hashlib.sha256(json.dumps([text, voice]).encode()).hexdigest()
    path = _directory() / f"{key}.wav"
    if not path.exists():
        _synthesiser.speak(text, voice, path)
    with wave.open(str(path)) as clip:
        return Speech(pcm=clip.readframes(clip.getnframes()), sample_rate=clip.getframerate())


def _serve() -> None:
    """The helper: Django set up once; each request spoken by a forked child (whose
    engine has synthesised nothing) into `path`, written whole or not at all."""
    import django

    django.setup()
    from speech_app.tts import EspeakSynthesizer

    for line in sys.stdin:
        request = json.loads(line)
        child = os.fork()
        if child == 0:
            code = 1
            try:
                speech = EspeakSynthesizer().synthesize(request["text"], voice=request["voice"])
                partial = f"{request['path']}.{os.getpid()}"
                with wave.open(partial, "wb") as clip:
                    clip.setnchannels(1)
                    clip.setsampwidth(2)
                    clip.setframerate(speech.sample_rate)
                    clip.writeframes(speech.pcm)
                os.replace(partial, request["path"])  # another process may write the same file: same bytes
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        print("ok" if os.waitstatus_to_exitcode(status) == 0 else f"failed ({status})", flush=True)


if __name__ == "__main__":
    _serve()
