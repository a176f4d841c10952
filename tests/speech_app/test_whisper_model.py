"""The bundled Whisper model is verified before it is ever loaded (issue 10): the two
third-party packages' bytes must hash to the pinned sha256, a damaged model is refused
and reported everywhere, and an operator's own model directory is never a download."""
import logging
import shutil

import pytest
from django.test import Client

from console.engines import engine_probes
from speech_app import stt, whisper_model
from speech_app.probes import RecognitionProbe
from speech_app.whisper import WhisperRecognizer
from tests.conftest import error_of, make_client
from tests.speech_app.audio_samples import encode, silence
from tests.speech_app.conftest import b64

pytestmark = [pytest.mark.django_db, pytest.mark.slow]  # joins and hashes the real 145 MB model


@pytest.fixture
def damaged_sources(tmp_path):
    """The real packages' files, with one byte of model.bin.part1 changed in a copy."""
    real = whisper_model.bundled_sources()
    damaged = bytearray(real.parts[0].read_bytes())
    damaged[len(damaged) // 2] ^= 0x01
    copy = tmp_path / "model.bin.part1"
    copy.write_bytes(bytes(damaged))
    return whisper_model.BundledSources(parts=(copy, real.parts[1]), small_files=real.small_files)


@pytest.fixture
def fresh_var_dir(settings, tmp_path):
    """A first start: nothing joined yet under VAR_DIR."""
    settings.VAR_DIR = tmp_path / "var"
    return settings.VAR_DIR


@pytest.fixture
def damaged_engine(monkeypatch, damaged_sources, fresh_var_dir):
    """This process's Whisper engine and probe replaced by ones that see the damaged
    packages; loading weights is made to fail loudly, to prove it never happens."""
    engine = WhisperRecognizer(sources=lambda: damaged_sources)

    def never(directory):
        raise AssertionError(f"weights were loaded from {directory}")

    monkeypatch.setattr(engine, "_construct", never)
    monkeypatch.setitem(stt.RECOGNIZERS, "whisper", lambda: engine)
    stt._instance.cache_clear()
    probe = RecognitionProbe()
    monkeypatch.setitem(engine_probes.probes, "whisper", probe)
    yield engine, probe
    stt._instance.cache_clear()


def test_the_packages_join_to_the_pinned_model(fresh_var_dir):
    directory = whisper_model.assembled_bundle(whisper_model.bundled_sources(), fresh_var_dir / "whisper")
    assert (directory / "model.bin").stat().st_size == whisper_model.MODEL_BIN_SIZE
    assert {path.name for path in directory.iterdir()} >= {"model.bin", "config.json", "tokenizer.json",
                                                          "vocabulary.txt"}


def test_a_damaged_part_is_refused_and_nothing_is_written(damaged_sources, fresh_var_dir, caplog):
    with caplog.at_level(logging.ERROR, logger="speech_app.whisper"):
        with pytest.raises(whisper_model.ModelIntegrityError) as refused:
            whisper_model.assembled_bundle(damaged_sources, fresh_var_dir / "whisper")
    assert whisper_model.MODEL_BIN_SHA256 in str(refused.value) and "not loaded" in str(refused.value)
    assert not list((fresh_var_dir / "whisper").rglob("model.bin*"))
    assert any("integrity check" in record.getMessage() for record in caplog.records)


def test_a_damaged_model_is_reported_everywhere_and_never_loaded(api_a, key_a, damaged_engine):
    engine, probe = damaged_engine
    response = api_a.post("/v2/audio/transcribe", {"audio_base64": b64(encode(silence(1.0), 16000, "wav"))},
                          format="json")
    assert response.status_code == 503
    error = error_of(response)
    assert error["code"] == "stt_unavailable" and "integrity check" in error["message"]
    assert engine.loaded is False

    probe()  # starts the probe, which meets the same refusal
    probe.wait(timeout=60)
    health = Client().get("/health").json()["whisper"]
    assert health["usableNow"] is False and "integrity check" in health["reason"]
    engines = {e["id"]: e for e in Client().get("/v2/meta/engines").json()["engines"]}
    assert engines["whisper"]["usableNow"] is False and "integrity check" in engines["whisper"]["reason"]
    assert engines["whisper"]["loaded"] is False
    module = make_client(key_a).get("/api/voice/health").json()
    whisper = next(e for e in module["engines"] if e["id"] == "whisper")
    assert module["ok"] is False and "integrity check" in whisper["reason"]


def test_a_joined_model_changed_on_disk_is_noticed_and_joined_again(fresh_var_dir, caplog):
    sources = whisper_model.bundled_sources()
    directory = whisper_model.assembled_bundle(sources, fresh_var_dir / "whisper")
    with open(directory / "model.bin", "r+b") as model:
        model.seek(1000)
        byte = model.read(1)
        model.seek(1000)
        model.write(bytes([byte[0] ^ 0xFF]))
    with caplog.at_level(logging.WARNING, logger="speech_app.whisper"):
        whisper_model.assembled_bundle(sources, fresh_var_dir / "whisper")
    assert any("changed since it was verified" in record.getMessage() for record in caplog.records)
    with open(directory / "model.bin", "rb") as model:
        model.seek(1000)
        assert model.read(1) == byte


def test_an_unchanged_joined_model_is_trusted_without_joining_again(fresh_var_dir, monkeypatch):
    sources = whisper_model.bundled_sources()
    whisper_model.assembled_bundle(sources, fresh_var_dir / "whisper")

    def no_join(*args):
        raise AssertionError("joined again")

    monkeypatch.setattr(whisper_model, "_join_parts", no_join)
    whisper_model.assembled_bundle(sources, fresh_var_dir / "whisper")


def test_an_operator_model_directory_must_be_complete(settings, tmp_path):
    sources = whisper_model.bundled_sources()
    own = tmp_path / "whisper-small-ct2"
    own.mkdir()
    shutil.copy(sources.small_files["config.json"], own / "config.json")
    (own / "model.bin").write_bytes(b"weights")
    with pytest.raises(whisper_model.ModelUnavailable, match="tokenizer.json"):
        whisper_model.model_directory(str(own), tmp_path)
    # A model name is a download in faster-whisper; here it is only a missing directory.
    with pytest.raises(whisper_model.ModelUnavailable, match="never downloaded"):
        whisper_model.model_directory("small", tmp_path)
