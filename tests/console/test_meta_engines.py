"""GET /v2/meta/engines: the process's engines and the registry's speech lanes,
with `usableNow` from the running system (CONTRACT §7, issue 7 point 7)."""
import json
from pathlib import Path

import pytest
from django.test import Client

from console.engines import EngineStatus, engine_probes
from registry_app.services import registry_load

pytestmark = pytest.mark.django_db
DEFAULT_DOCUMENT = Path(__file__).resolve().parents[2] / "registry_app" / "data" / "registry.json"


def fake_engine(engine_id, kind, languages, usable):
    return lambda: EngineStatus(id=engine_id, kind=kind, name=engine_id, engine=f"{engine_id}-engine",
                                mode="offline", languages=tuple(languages), usable_now=usable)


@pytest.fixture
def engines(monkeypatch):
    monkeypatch.setattr(engine_probes, "probes", {
        "espeak": fake_engine("espeak", "tts", ["de"], True),
        "vosk": fake_engine("vosk", "stt", ["ko"], True),
    })


@pytest.fixture
def registry(db):
    registry_load(document=json.loads(DEFAULT_DOCUMENT.read_text()), loaded_by="tests")


def by_id(body):
    return {engine["id"]: engine for engine in body["engines"]}


def test_engines_without_a_registry_list_the_process_engines(engines):
    body = Client().get("/v2/meta/engines").json()
    assert set(by_id(body)) == {"espeak", "vosk"}
    assert all(engine["source"] == "process" for engine in body["engines"])


def test_registry_lanes_are_usable_only_when_served_here(engines, registry):
    engines_by_id = by_id(Client().get("/v2/meta/engines").json())
    # eSpeak NG speaks German here, and the lane is this service's speech module.
    assert engines_by_id["tts-espeak-de"]["usableNow"] is True
    assert engines_by_id["tts-espeak-de"]["servedBy"] == "espeak"
    # Vosk runs, but only with a Korean model: the German lane is not usable.
    assert engines_by_id["stt-vosk-de"]["usableNow"] is False
    assert engines_by_id["stt-vosk-de"]["servedBy"] == "vosk"
    # Piper has no engine in this process; hosted lanes are never usable from here.
    assert engines_by_id["tts-piper-de"]["usableNow"] is False
    assert engines_by_id["tts-azure-de"]["usableNow"] is False
    assert engines_by_id["tts-azure-de"]["servedBy"] is None
    kinds = {engine["kind"] for engine in engines_by_id.values()}
    assert kinds == {"tts", "stt"}


def test_a_lane_follows_its_engine_going_down(engines, registry, monkeypatch):
    monkeypatch.setitem(engine_probes.probes, "espeak", fake_engine("espeak", "tts", ["de"], False))
    assert by_id(Client().get("/v2/meta/engines").json())["tts-espeak-de"]["usableNow"] is False


def test_every_engine_entry_has_the_contract_fields(engines, registry):
    for engine in Client().get("/v2/meta/engines").json()["engines"]:
        assert {"id", "kind", "name", "engine", "mode", "languages", "usableNow"} <= set(engine)
