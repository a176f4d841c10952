"""Azure Speech TTS (speech_app.providers.azure_tts) against a fake Azure REST endpoint
on loopback (tests/azure_tts_fake.py) that checks the request field by field."""
import threading

import pytest

from registry_app.lanes.config import lane_variable
from registry_app.lanes.failover import LaneFailure
from registry_app.snapshot import SnapshotLane
from speech_app.providers.azure_tts import AzureSynthesizer
from speech_app.streaming import CallAudio, protocols, streaming_engine
from tests.azure_tts_fake import FakeAzureTts

KEY = "az-test-key"
LANE_ENTRY = {
    "id": "tts-azure-de", "name": "Azure Neural Katja", "capability": "tts", "provider": "Microsoft",
    "hosting": "api", "access": "voice-gateway", "endpoint": "/v1/speak", "health": None,
    "cost": {"model": "per-character", "unit": "1M chars", "eur": 14.5}, "status": "key-ready", "priority": 50,
    "quality_tier": "high", "latency_class": "fast",
    "params": {"streaming": True, "languages": ["de"], "voices": ["de-DE-KatjaNeural"], "protocol": "azure-tts"},
    "test": "", "source": "", "notes": "",
}


def lane() -> SnapshotLane:
    return SnapshotLane.from_entry(LANE_ENTRY)


@pytest.mark.parametrize("encoding, rate, output_format, byte", [
    ("alaw", 8000, "raw-8khz-8bit-mono-alaw", b"\xd5"),
    ("mulaw", 8000, "raw-8khz-8bit-mono-mulaw", b"\xff"),
    ("linear16", 16000, "raw-16khz-16bit-mono-pcm", b"\x01\x00"),
])
def test_azure_is_asked_in_the_calls_encoding_with_ssml_and_the_voice(encoding, rate, output_format, byte):
    with FakeAzureTts(chunks=3, chunk_bytes=800) as fake:
        synthesizer = AzureSynthesizer(lane(), endpoint=fake.base_url, key=KEY, voice="")
        audio = b"".join(synthesizer.speak("Guten Tag & willkommen <bei> uns.", audio=CallAudio(encoding, rate),
                                           language="de").chunks())
        request = fake.requests[0]
    assert request.output_format == output_format
    assert request.headers["ocp-apim-subscription-key"] == KEY
    assert request.headers["content-type"] == "application/ssml+xml"
    assert (request.language, request.voice, request.text) == (
        "de-DE", "de-DE-KatjaNeural", "Guten Tag & willkommen <bei> uns.")  # escaped in SSML, read back whole
    assert audio == byte * (2400 // len(byte))  # the audio as Azure sent it, no transcoding


def test_the_first_audio_arrives_while_the_rest_is_still_made_and_cancel_hangs_up():
    hold = threading.Event()
    with FakeAzureTts(chunks=3, chunk_bytes=800, hold=hold) as fake:
        stream = AzureSynthesizer(lane(), endpoint=fake.base_url, key=KEY, voice="de-DE-KatjaNeural").speak(
            "Einen Moment bitte.", audio=CallAudio("alaw", 8000), language="de")
        chunks = stream.chunks()
        first = next(chunks)  # Azure holds the rest back: this came before it was made
        assert first == b"\xd5" * 800
        stream.cancel()  # barge-in
        assert list(chunks) == []
        hold.set()
        assert fake.requests[0].done.wait(5)
        assert fake.requests[0].hung_up.is_set()


@pytest.mark.parametrize("status, outcome", [(401, "rejected"), (429, "rate_limited"), (503, "server_error")])
def test_azures_refusals_are_lane_failures(status, outcome):
    with FakeAzureTts(status=status) as fake:
        with pytest.raises(LaneFailure) as failure:
            AzureSynthesizer(lane(), endpoint=fake.base_url, key=KEY, voice="").speak(
                "Hallo.", audio=CallAudio("linear16", 16000), language="de")
    assert failure.value.outcome == outcome


def test_a_wrong_key_is_refused_by_the_fake_as_by_azure():
    with FakeAzureTts() as fake:
        with pytest.raises(LaneFailure) as failure:
            AzureSynthesizer(lane(), endpoint=fake.base_url, key="wrong", voice="").speak(
                "Hallo.", audio=CallAudio("linear16", 16000), language="de")
    assert failure.value.outcome == "rejected" and "401" in failure.value.detail


def test_the_lane_declares_azure_tts_and_takes_its_region_endpoint_from_the_environment(settings):
    assert protocols()["azure-tts"].capability == "tts"
    settings.GATEWAY_LANE_SETTINGS = {lane_variable("tts-azure-de", "KEY"): KEY}
    engine = streaming_engine(lane(), voice="de-DE-KatjaNeural")
    assert isinstance(engine, AzureSynthesizer)
    assert engine.endpoint == "https://westeurope.tts.speech.microsoft.com" and engine.voice == "de-DE-KatjaNeural"
    settings.GATEWAY_LANE_SETTINGS[lane_variable("tts-azure-de", "ENDPOINT")] = "wss://x.example"
    with pytest.raises(LaneFailure, match="https/http URL"):
        streaming_engine(lane())


def test_an_endpoint_that_names_the_vendors_whole_url_is_used_as_it_is():
    with FakeAzureTts(chunks=1) as fake:
        stream = AzureSynthesizer(lane(), endpoint=f"{fake.base_url}/cognitiveservices/v1", key=KEY, voice="").speak(
            "Hallo.", audio=CallAudio("linear16", 16000), language="de")
        assert list(stream.chunks())  # a wrong path is a 404 at the fake
