"""The synthesis and recognition engines are picked through the registry's router
(issue 7: the audio engines pick their lane through it), and serve without a registry
too (issue 10: Whisper by default, Vosk for the languages in VOSK_MODELS)."""
import copy
import json
from pathlib import Path

import pytest

from registry_app.services import registry_load
from speech_app import tts
from speech_app.services import recognizer_for, synthesizer_for

pytestmark = pytest.mark.django_db
DOCUMENT = json.loads((Path(__file__).resolve().parents[2] / "registry_app" / "data" / "registry.json").read_text())


class NeuralStandIn(tts.EspeakSynthesizer):
    """Another local engine, as a neural one would be once installed: it speaks the
    language voices (`de`) and is reached through its registry lane `tts-neural-de`."""


@pytest.fixture
def neural_engine(monkeypatch):
    monkeypatch.setitem(tts.SYNTHESIZERS, "neural", NeuralStandIn)
    yield
    tts._instance.cache_clear()


def with_lane_live(lane_id, **changes):
    document = copy.deepcopy(DOCUMENT)
    document["version"] = f"{lane_id}-live"
    models = document["models"]
    if not any(lane["id"] == lane_id for lane in models):  # a copy of Piper's lane under its own id
        models.append(dict(next(lane for lane in models if lane["id"] == "tts-piper-de"), id=lane_id))
    for lane in models:
        if lane["id"] == lane_id:
            lane.update(status="live", **changes)  # priority 10 beats eSpeak's 30
    return document


def test_without_a_registry_the_default_engine_serves(neural_engine):
    assert type(synthesizer_for("de")) is tts.EspeakSynthesizer


def test_the_first_routed_lane_served_here_picks_the_engine(neural_engine):
    registry_load(document=with_lane_live("tts-neural-de"), loaded_by="tests")
    assert type(synthesizer_for("de")) is NeuralStandIn
    # Its lane speaks only German: English routes to eSpeak NG.
    assert type(synthesizer_for("en")) is tts.EspeakSynthesizer


def test_a_routed_lane_without_an_engine_here_is_skipped(db):
    registry_load(document=with_lane_live("tts-neural-de"), loaded_by="tests")
    # No such engine in this process: the next lane served here, eSpeak NG, speaks.
    assert type(synthesizer_for("de")) is tts.EspeakSynthesizer


def test_a_routed_lane_whose_engine_lacks_the_voice_is_skipped(db, settings):
    settings.PIPER_VOICES = ""
    registry_load(document=with_lane_live("tts-piper-de"), loaded_by="tests")
    # Piper runs here, but no Piper voice speaks German: eSpeak NG does.
    assert type(synthesizer_for("de")) is tts.EspeakSynthesizer


# --- recognition: the same rule, with Vosk for the languages an operator configured ---

def with_stt_lanes(whisper_priority, vosk_priority):
    document = copy.deepcopy(DOCUMENT)
    document["version"] = f"stt-{whisper_priority}-{vosk_priority}"
    for lane in document["models"]:
        if lane["id"] == "stt-whisper-base":
            lane["priority"] = whisper_priority
        if lane["id"] == "stt-vosk-de":
            lane["priority"] = vosk_priority
    return document


def test_without_a_registry_whisper_recognises_and_vosk_keeps_its_languages(settings, korean_model):
    assert recognizer_for("de").id == "whisper"
    assert recognizer_for("auto").id == "whisper"
    assert recognizer_for("ko").id == "vosk"
    settings.VOSK_MODELS = {}
    assert recognizer_for("ko").id == "whisper"


def test_the_shipped_registry_routes_german_to_whisper(settings):
    settings.VOSK_MODELS = {"de": "/srv/models/vosk-model-small-de-0.15"}
    registry_load(document=DOCUMENT, loaded_by="tests")
    assert recognizer_for("de").id == "whisper"


def test_a_registry_that_ranks_vosk_first_picks_it_only_where_it_has_a_model(settings):
    registry_load(document=with_stt_lanes(20, 1), loaded_by="tests")
    settings.VOSK_MODELS = {}
    assert recognizer_for("de").id == "whisper"  # Vosk's lane is not served here without a model
    settings.VOSK_MODELS = {"de": "/srv/models/vosk-model-small-de-0.15"}
    assert recognizer_for("de").id == "vosk"
    assert recognizer_for("auto").id == "whisper"  # only Whisper detects languages
