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


class PiperStandIn(tts.EspeakSynthesizer):
    """Another local engine, as Piper would be once installed."""


@pytest.fixture
def piper_engine(monkeypatch):
    monkeypatch.setitem(tts.SYNTHESIZERS, "piper", PiperStandIn)
    yield
    tts._instance.cache_clear()


def with_piper_live():
    document = copy.deepcopy(DOCUMENT)
    document["version"] = "piper-live"
    for lane in document["models"]:
        if lane["id"] == "tts-piper-de":
            lane["status"] = "live"  # priority 10 beats eSpeak's 30
    return document


def test_without_a_registry_the_default_engine_serves(piper_engine):
    assert type(synthesizer_for("de")) is tts.EspeakSynthesizer


def test_the_first_routed_lane_served_here_picks_the_engine(piper_engine):
    registry_load(document=with_piper_live(), loaded_by="tests")
    assert type(synthesizer_for("de")) is PiperStandIn
    # Piper's lane speaks only German: English routes to eSpeak NG.
    assert type(synthesizer_for("en")) is tts.EspeakSynthesizer


def test_a_routed_lane_without_an_engine_here_is_skipped(db):
    registry_load(document=with_piper_live(), loaded_by="tests")
    # No Piper in this process: the next lane served here, eSpeak NG, speaks.
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
