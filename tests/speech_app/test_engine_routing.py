"""The synthesis engine is picked through the registry's router (issue 7: the audio
engines pick their lane through it), and serves without a registry too."""
import copy
import json
from pathlib import Path

import pytest

from registry_app.services import registry_load
from speech_app import tts
from speech_app.services import synthesizer_for

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
