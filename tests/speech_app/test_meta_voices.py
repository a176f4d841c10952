"""GET /v2/meta/voices: the voices of the registry's callable tts lanes, each an
assistant's `voice`; and /v2/meta/engines' state of the streaming lanes (usable with
a key, their last error)."""
import pytest
from django.test import Client

from console.engines import engine_probes
from registry_app.lanes.config import lane_variable
from registry_app.services import lane_cooldown_start, lane_error_record
from tests.console.test_meta_engines import fake_engine
from tests.speech_app.speech_server import load

pytestmark = pytest.mark.django_db


@pytest.fixture
def engines(monkeypatch):
    monkeypatch.setattr(engine_probes, "probes", {"espeak": fake_engine("espeak", "tts", ["de"], True)})


def voices():
    response = Client().get("/v2/meta/voices")
    assert response.status_code == 200
    return {voice["id"]: voice for voice in response.json()["voices"]}


def engine_states():
    return {engine["id"]: engine for engine in Client().get("/v2/meta/engines").json()["engines"]}


def test_the_callable_lanes_voices_are_listed_as_lane_and_voice(engines, settings):
    load()
    settings.GATEWAY_LANE_SETTINGS = {lane_variable("tts-azure-de", "KEY"): "az",
                                      lane_variable("tts-cartesia-de", "KEY"): "ca"}
    listed = voices()
    espeak = listed["tts-espeak-de:de"]  # this process's eSpeak NG
    assert (espeak["local"], espeak["usableNow"], espeak["protocol"]) == (True, True, "local")
    katja = listed["tts-azure-de:de-DE-KatjaNeural"]
    assert (katja["lane"], katja["voice"], katja["protocol"], katja["local"], katja["usableNow"]) == (
        "tts-azure-de", "de-DE-KatjaNeural", "azure-tts", False, True)
    assert listed["tts-cartesia-de:3f4ade23-6eb4-4279-ab05-6a144947c4d5"]["usableNow"] is True
    rachel = listed["tts-elevenlabs:21m00Tcm4TlvDq8ikWAM"]  # callable by its status, but no key here
    assert rachel["usableNow"] is False and "GATEWAY_KEY_TTS_ELEVENLABS" in rachel["reason"]
    assert not any(voice.startswith("tts-piper-de:") for voice in listed)  # module-ready: not callable
    lane_cooldown_start(lane_id="tts-azure-de", seconds=60, reason="server_error: HTTP 503")
    assert "HTTP 503" in voices()["tts-azure-de:de-DE-KatjaNeural"]["reason"]


def test_every_listed_voice_is_an_assistants_voice(engines, api_a):
    load()
    for voice in voices():
        response = api_a.post("/v2/assistants", {"name": "Empfang", "voice": voice}, format="json")
        assert response.status_code == 201 and response.json()["voice"] == voice, response.content


def test_the_openapi_document_describes_the_voices():
    paths = Client().get("/v2/schema", HTTP_ACCEPT="application/json").json()["paths"]
    assert "/v2/meta/voices" in paths
    schema = paths["/v2/meta/voices"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/Voices"}


def test_a_streaming_lane_is_usable_with_its_key_and_shows_its_last_error(engines, settings):
    load()
    states = engine_states()
    assert states["tts-azure-de"]["usableNow"] is False and "GATEWAY_KEY_TTS_AZURE_DE" in states["tts-azure-de"]["reason"]
    assert states["tts-azure-de"]["lastError"] is None
    settings.GATEWAY_LANE_SETTINGS = {lane_variable("tts-azure-de", "KEY"): "az"}
    assert engine_states()["tts-azure-de"]["usableNow"] is True
    lane_error_record(lane_id="tts-azure-de", outcome="rejected", detail="HTTP 401")
    error = engine_states()["tts-azure-de"]["lastError"]
    assert (error["outcome"], error["detail"]) == ("rejected", "HTTP 401") and error["at"]
