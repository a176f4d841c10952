"""Deepgram live STT (speech_app.providers.deepgram_live) against a fake Deepgram on
loopback (tests/deepgram_fake.py), whose wire format is checked with Deepgram's own SDK
as the client."""
import time

import pytest
from deepgram import DeepgramClient
from deepgram.environment import DeepgramClientEnvironment
from deepgram.listen.v1.types import ListenV1Metadata, ListenV1Results, ListenV1UtteranceEnd

from registry_app.lanes.config import lane_variable
from registry_app.lanes.failover import LaneFailure
from registry_app.snapshot import SnapshotLane
from speech_app.providers import deepgram_live
from speech_app.providers.deepgram_live import DeepgramRecognizer, DeepgramSession
from speech_app.streaming import CallAudio, EndOfSpeech, Event, Heard, protocols, streaming_engine
from tests.deepgram_fake import FakeDeepgram

KEY = "dg-test-key"
LANE_ENTRY = {
    "id": "stt-deepgram", "name": "Deepgram Nova-3", "capability": "stt", "provider": "Deepgram",
    "hosting": "api", "access": "voice-gateway", "endpoint": "/v1/transcribe", "health": None,
    "cost": {"model": "per-minute", "unit": "audio-min", "eur": 0.004}, "status": "key-ready", "priority": 40,
    "quality_tier": "high", "latency_class": "fast",
    "params": {"streaming": True, "languages": ["de"], "model": "nova-3", "protocol": "deepgram-live"},
    "test": "", "source": "", "notes": "",
}


def lane() -> SnapshotLane:
    return SnapshotLane.from_entry(LANE_ENTRY)


def sdk_client(fake: FakeDeepgram, key: str = KEY) -> DeepgramClient:
    return DeepgramClient(api_key=key, environment=DeepgramClientEnvironment(
        base=fake.base_url.replace("ws://", "http://"), production=fake.base_url, agent=fake.base_url,
        agent_rest=fake.base_url.replace("ws://", "http://")))


def stream(session: DeepgramSession, audio: CallAudio, seconds: float, frame: bytes) -> list[Event]:
    """Sends `seconds` of audio in 20 ms frames (each frame `frame`'s bytes) and gathers the events."""
    events: list[Event] = []
    for _ in range(round(seconds / 0.02)):
        session.send(frame)
        events += session.events(0)
    return events


def wait_events(session: DeepgramSession, until, deadline: float = 5.0) -> list[Event]:
    events: list[Event] = []
    ends = time.monotonic() + deadline
    while not until(events) and time.monotonic() < ends:
        events += session.events(0.1)
    return events


def test_the_fake_speaks_deepgrams_wire_format_as_the_sdk_reads_it():
    with FakeDeepgram(utterances=["Guten Tag"], seconds_per_word=0.2) as fake:
        client = sdk_client(fake)
        with client.listen.v1.connect(model="nova-3", language="de", encoding="linear16", sample_rate=16000,
                                      interim_results="true", endpointing=300, utterance_end_ms=1000,
                                      keyterm=["Stimmwerk"]) as socket:
            frame = b"\x00\x00" * 320
            for _ in range(100):  # 2 s
                socket.send_media(frame)
            received = []
            while not any(isinstance(m, ListenV1UtteranceEnd) for m in received):
                received.append(socket.recv())
            socket.send_close_stream()
            while not isinstance(received[-1], ListenV1Metadata):
                received.append(socket.recv())
    results = [m for m in received if isinstance(m, ListenV1Results)]
    assert [r.channel.alternatives[0].transcript for r in results] == ["Guten", "Guten Tag", "Guten Tag"]
    assert [(r.is_final, r.speech_final) for r in results] == [(False, False), (False, False), (True, True)]
    words = results[-1].channel.alternatives[0].words
    assert [(w.word, w.punctuated_word, w.start, w.end) for w in words] == [
        ("guten", "Guten", 0.0, 0.2), ("tag", "Tag", 0.2, 0.4)]
    end = next(m for m in received if isinstance(m, ListenV1UtteranceEnd))
    assert end.last_word_end == 0.4
    connection = fake.connections[0]
    assert connection.headers["authorization"] == f"Token {KEY}"
    assert connection.param("keyterm") == "Stimmwerk" and connection.controls == ["CloseStream"]


def test_a_wrong_key_is_refused_as_deepgram_refuses_it():
    with FakeDeepgram() as fake:
        with pytest.raises(Exception, match="401|credentials"):
            with sdk_client(fake, key="wrong").listen.v1.connect(model="nova-3"):
                pass
        recognizer = DeepgramRecognizer(lane(), endpoint=fake.base_url, key="wrong")
        with pytest.raises(LaneFailure) as failure:
            recognizer.open(audio=CallAudio("linear16", 16000), language="de", keyterms=[])
    assert failure.value.outcome == "rejected" and "401" in failure.value.detail


def test_the_browser_call_is_heard_with_interim_results_word_times_and_the_end_of_speech(monkeypatch):
    # The subject is what is heard, not the stall rule (tested below): the audio is sent
    # faster than real time, and a busy machine's fake must not count as a stopped one.
    monkeypatch.setattr(deepgram_live, "STALL_SECONDS", 30.0)
    with FakeDeepgram(utterances=["Ich möchte einen Termin."], seconds_per_word=0.25) as fake:
        recognizer = DeepgramRecognizer(lane(), endpoint=fake.base_url, key=KEY)
        audio = CallAudio("linear16", 16000)
        session = recognizer.open(audio=audio, language="de", keyterms=["Termin", "Stimmwerk", "Termin"])
        events = stream(session, audio, 3.0, b"\x01\x00" * 320)
        events += wait_events(session, lambda found: any(isinstance(e, EndOfSpeech) for e in found))
        session.close()
        connection = fake.connections[0]
    heard = [e for e in events if isinstance(e, Heard)]
    assert [h.text for h in heard if not h.final] == ["Ich", "Ich möchte", "Ich möchte einen",
                                                       "Ich möchte einen Termin."]
    final = next(h for h in heard if h.final)
    assert final.speech_final and final.text == "Ich möchte einen Termin."
    assert [(w.word, w.start, w.end) for w in final.words][-1] == ("Termin.", 0.75, 1.0)
    assert EndOfSpeech(last_word_end=1.0) in events
    assert connection.path == "/v1/listen"
    assert {name: connection.param(name) for name in ("model", "language", "encoding", "sample_rate",
                                                       "interim_results", "endpointing", "utterance_end_ms")} == {
        "model": "nova-3", "language": "de", "encoding": "linear16", "sample_rate": "16000",
        "interim_results": "true", "endpointing": "300", "utterance_end_ms": "1000"}
    assert connection.query["keyterm"] == ["Termin", "Stimmwerk"]  # each once
    assert connection.controls == ["CloseStream"] and connection.closed.wait(2)


@pytest.mark.parametrize("encoding, frame", [("mulaw", bytes([0xFF, 0x7F]) * 80), ("alaw", bytes([0xD5, 0x55]) * 80)])
def test_a_phone_calls_audio_goes_to_deepgram_unconverted(encoding, frame, monkeypatch):
    # The subject is the encoding, not the stall rule (tested below): a busy machine's
    # slow fake must not count as a provider that stopped answering.
    monkeypatch.setattr(deepgram_live, "STALL_SECONDS", 30.0)
    with FakeDeepgram(utterances=["Hallo"], seconds_per_word=0.2) as fake:
        audio = CallAudio(encoding, 8000)
        session = DeepgramRecognizer(lane(), endpoint=fake.base_url, key=KEY).open(
            audio=audio, language="de", keyterms=[])
        events = stream(session, audio, 1.0, frame)
        events += wait_events(session, lambda found: any(isinstance(e, Heard) and e.final for e in found))
        session.close()
        connection = fake.connections[0]
    assert (connection.param("encoding"), connection.param("sample_rate")) == (encoding, "8000")
    assert bytes(connection.audio) == frame * 50  # byte for byte what the call sent
    assert any(isinstance(e, Heard) and e.final and e.text == "Hallo" for e in events)


def test_keep_alive_while_the_agent_speaks_and_finalize_at_the_turns_end():
    with FakeDeepgram(utterances=["Einen Moment bitte"], seconds_per_word=0.2) as fake:
        audio = CallAudio("linear16", 16000)
        session = DeepgramRecognizer(lane(), endpoint=fake.base_url, key=KEY).open(
            audio=audio, language="de", keyterms=[])
        events = stream(session, audio, 0.5, b"\x00\x00" * 320)  # two words heard, the third not yet
        session.finalize()
        events += wait_events(session, lambda found: any(isinstance(e, Heard) and e.final for e in found))
        session.keep_alive()
        assert session.events(2.5) == []  # no audio flows: quiet is no stall
        session.close()
        connection = fake.connections[0]
    final = next(e for e in events if isinstance(e, Heard) and e.final)
    assert final.text == "Einen Moment" and not final.speech_final
    assert connection.controls == ["Finalize", "KeepAlive", "CloseStream"]


def test_a_recogniser_that_stops_answering_while_audio_flows_fails_after_two_seconds():
    with FakeDeepgram(stall=True) as fake:
        audio = CallAudio("linear16", 16000)
        session = DeepgramRecognizer(lane(), endpoint=fake.base_url, key=KEY).open(
            audio=audio, language="de", keyterms=[])
        started = time.monotonic()
        with pytest.raises(LaneFailure) as failure:
            while time.monotonic() - started < 5:
                session.send(b"\x00\x00" * 320)
                session.events(0.02)
        session.close()
    assert failure.value.outcome == "timeout" and 2.0 <= time.monotonic() - started < 3.0


def test_a_server_error_or_nothing_listening_is_a_lane_failure():
    with FakeDeepgram(status=503) as fake:
        with pytest.raises(LaneFailure) as failure:
            DeepgramRecognizer(lane(), endpoint=fake.base_url, key=KEY).open(
                audio=CallAudio("linear16", 16000), language="de", keyterms=[])
        closed = fake.base_url
    assert failure.value.outcome == "server_error"
    with pytest.raises(LaneFailure) as refused:
        DeepgramRecognizer(lane(), endpoint=closed, key=KEY).open(
            audio=CallAudio("linear16", 16000), language="de", keyterms=[])
    assert refused.value.outcome == "connection_error"


def test_the_lane_declares_its_protocol_and_takes_its_endpoint_and_key_from_the_environment(settings):
    assert "deepgram-live" in protocols()
    settings.GATEWAY_LANE_SETTINGS = {}
    with pytest.raises(LaneFailure, match=lane_variable("stt-deepgram", "KEY")):
        streaming_engine(lane())
    settings.GATEWAY_LANE_SETTINGS = {lane_variable("stt-deepgram", "KEY"): KEY,
                                      lane_variable("stt-deepgram", "ENDPOINT"): "https://api.eu.deepgram.com"}
    with pytest.raises(LaneFailure, match="wss/ws URL"):
        streaming_engine(lane())
    settings.GATEWAY_LANE_SETTINGS[lane_variable("stt-deepgram", "ENDPOINT")] = "wss://api.eu.deepgram.com/"
    engine = streaming_engine(lane())
    assert isinstance(engine, DeepgramRecognizer) and engine.endpoint == "wss://api.eu.deepgram.com"
    settings.GATEWAY_LANE_SETTINGS.pop(lane_variable("stt-deepgram", "ENDPOINT"))
    assert streaming_engine(lane()).endpoint == "wss://api.deepgram.com"


def test_an_endpoint_that_names_the_vendors_whole_url_is_used_as_it_is():
    with FakeDeepgram(utterances=["Hallo"]) as fake:
        session = DeepgramRecognizer(lane(), endpoint=f"{fake.base_url}/v1/listen", key=KEY).open(
            audio=CallAudio("linear16", 16000), language="de", keyterms=[])
        session.close()
        assert fake.connections[0].path == "/v1/listen"  # a wrong path is a 404 at the fake
