"""ElevenLabs input streaming (speech_app.providers.elevenlabs_stream) and Cartesia's
WebSocket (speech_app.providers.cartesia_ws) against fakes on loopback
(tests/tts_ws_fakes.py), whose wire format is first checked with the vendors' own SDKs
as clients: what the SDK sends, the fake takes; what the fake answers, the SDK reads."""
import threading

import pytest
from cartesia import Cartesia
from elevenlabs.client import ElevenLabs

from registry_app.lanes.config import lane_variable
from registry_app.lanes.failover import LaneFailure
from registry_app.snapshot import SnapshotLane
from speech_app.providers.cartesia_ws import CartesiaSynthesizer
from speech_app.providers.elevenlabs_stream import ElevenLabsSynthesizer
from speech_app.streaming import CallAudio, protocols, streaming_engine
from tests.tts_ws_fakes import FakeCartesia, FakeElevenLabs

EL_VOICE, CA_VOICE = "21m00Tcm4TlvDq8ikWAM", "3f4ade23-6eb4-4279-ab05-6a144947c4d5"


def lane(lane_id: str, protocol: str, voices: list[str], model: str) -> SnapshotLane:
    return SnapshotLane.from_entry({
        "id": lane_id, "name": lane_id, "capability": "tts", "provider": "x", "hosting": "api",
        "access": "voice-gateway", "endpoint": "/v1/speak", "health": None,
        "cost": {"model": "per-character", "unit": "1k chars", "eur": 0.1}, "status": "key-ready", "priority": 40,
        "quality_tier": "high", "latency_class": "fast",
        "params": {"streaming": True, "languages": ["de"], "voices": voices, "protocol": protocol, "model": model},
        "test": "", "source": "", "notes": "",
    })


def elevenlabs(fake: FakeElevenLabs, **kwargs) -> ElevenLabsSynthesizer:
    return ElevenLabsSynthesizer(lane("tts-elevenlabs", "elevenlabs-stream", [EL_VOICE], "eleven_multilingual_v2"),
                                 endpoint=kwargs.pop("endpoint", fake.base_url), key=kwargs.pop("key", fake.key),
                                 voice="", **kwargs)


def cartesia(fake: FakeCartesia, **kwargs) -> CartesiaSynthesizer:
    return CartesiaSynthesizer(lane("tts-cartesia-de", "cartesia-ws", [CA_VOICE], "sonic-3"),
                               endpoint=kwargs.pop("endpoint", fake.base_url), key=kwargs.pop("key", fake.key),
                               voice="", **kwargs)


# --- The fakes, checked with the vendors' SDKs -------------------------------------------

def test_the_elevenlabs_sdk_streams_input_to_the_fake_and_reads_its_audio():
    with FakeElevenLabs(chunks=2, chunk_bytes=800) as fake:
        client = ElevenLabs(api_key=fake.key, base_url=fake.base_url.replace("ws://", "http://"))
        # The SDK makes its WebSocket URL wss:// of the base; the fake is plain ws:// on loopback.
        client.text_to_speech._ws_base_url = fake.base_url
        audio = b"".join(client.text_to_speech.convert_realtime(
            EL_VOICE, text=iter(["Guten Tag. ", "Wie kann ich helfen?"]), model_id="eleven_multilingual_v2",
            output_format="pcm_16000"))
        connection = fake.connections[0]
    assert connection.path == f"/v1/text-to-speech/{EL_VOICE}/stream-input"
    assert connection.param("output_format") == "pcm_16000" and connection.headers["xi-api-key"] == fake.key
    assert connection.texts[0] == " " and connection.texts[-1] == ""
    assert "".join(connection.texts[1:]).strip() == "Guten Tag. Wie kann ich helfen?"
    assert audio and set(audio[::2]) == {2} and set(audio[1::2]) == {0}


def test_the_cartesia_sdk_speaks_contexts_whole_and_flushed_with_the_fake_and_cancels_one():
    """A context spoken whole (`continue: false`); Cartesia's documented flow of a continued
    context — a sentence, a flush (an empty transcript with `flush`), the next sentence,
    the end — its audio by flush id, as the SDK reads it; a context cancelled."""
    alaw = {"container": "raw", "encoding": "pcm_alaw", "sample_rate": 8000}
    with FakeCartesia(chunks=2, chunk_bytes=800) as fake:
        client = Cartesia(api_key=fake.key, base_url=fake.base_url.replace("ws://", "http://"),
                          websocket_base_url=fake.base_url)
        with client.tts.websocket_connect() as connection:
            context = connection.context(model_id="sonic-3", voice={"mode": "id", "id": CA_VOICE}, language="de",
                                         output_format=alaw)
            context.push("Guten Tag.", continue_=False)
            events = list(context.receive())
            turn = connection.context(model_id="sonic-3", voice={"mode": "id", "id": CA_VOICE}, language="de",
                                      output_format=alaw)
            turn.push("Guten Tag. ")
            turn.push("", flush=True)
            turn.push("Wie kann ich helfen?")
            turn.no_more_inputs()
            flushed = list(turn.receive())
            other = connection.context(model_id="sonic-3", voice={"mode": "id", "id": CA_VOICE},
                                       output_format={"container": "raw", "encoding": "pcm_s16le", "sample_rate": 16000})
            other.push("Einen Moment", continue_=True)
            other.cancel()
        record = fake.connections[0]
        assert record.closed.wait(5)
    assert [event.type for event in events] == ["chunk", "chunk", "done"]
    assert b"".join(event.audio for event in events if event.type == "chunk") == b"\xd5" * 1600
    assert [(event.type, getattr(event, "flush_id", None)) for event in flushed] == [
        ("chunk", 1), ("chunk", 1), ("flush_done", 1), ("chunk", 2), ("chunk", 2), ("done", None)]
    assert record.headers["authorization"] == f"Bearer {fake.key}" and record.headers["cartesia-version"]
    assert record.messages[0]["output_format"]["encoding"] == "pcm_alaw" and record.messages[0]["continue"] is False
    assert record.cancelled == [record.messages[-2]["context_id"]]


# --- ElevenLabs ---------------------------------------------------------------------------

@pytest.mark.parametrize("encoding, rate, asked, byte", [
    ("linear16", 16000, "pcm_16000", b"\x02\x00"),
    ("mulaw", 8000, "ulaw_8000", b"\xff"),
    ("alaw", 8000, "ulaw_8000", b"\xd5"),  # ElevenLabs has no A-law: μ-law transcoded (silence to silence)
])
def test_elevenlabs_is_asked_in_the_calls_format_and_the_sentence_is_flushed(encoding, rate, asked, byte):
    with FakeElevenLabs(chunks=3, chunk_bytes=800) as fake:
        audio = b"".join(elevenlabs(fake).speak("Guten Tag, hier ist die Praxis.", audio=CallAudio(encoding, rate),
                                                language="de").chunks())
        connection = fake.connections[0]
        assert connection.closed.wait(5)
    assert connection.path == f"/v1/text-to-speech/{EL_VOICE}/stream-input"
    assert (connection.param("output_format"), connection.param("model_id")) == (asked, "eleven_multilingual_v2")
    assert connection.headers["xi-api-key"] == fake.key
    assert connection.texts == [" ", "Guten Tag, hier ist die Praxis. ", ""]  # start, the sentence, the end
    assert connection.messages[1]["flush"] is True and not connection.hung_up
    assert audio == byte * (2400 // len(byte))


def test_elevenlabs_is_cancelled_at_barge_in_by_closing_its_stream():
    hold = threading.Event()
    with FakeElevenLabs(chunks=3, chunk_bytes=800, hold=hold) as fake:
        stream = elevenlabs(fake).speak("Einen Moment bitte.", audio=CallAudio("alaw", 8000), language="de")
        chunks = stream.chunks()
        assert next(chunks) == b"\xd5" * 800  # the first audio, while the rest is held back
        stream.cancel()
        hold.set()
        assert fake.connections[0].closed.wait(5)
    assert fake.connections[0].hung_up  # the provider saw the client go before its answer was whole


def test_a_wrong_elevenlabs_key_is_a_rejection_that_says_401():
    with FakeElevenLabs() as fake, pytest.raises(LaneFailure) as failure:
        elevenlabs(fake, key="falsch").speak("Hallo.", audio=CallAudio("linear16", 16000), language="de")
    assert failure.value.outcome == "rejected" and "401" in failure.value.detail


def test_elevenlabs_takes_a_base_that_names_the_api_path(settings):
    with FakeElevenLabs(chunks=1) as fake:
        assert list(elevenlabs(fake, endpoint=f"{fake.base_url}/v1/text-to-speech").speak(
            "Hallo.", audio=CallAudio("linear16", 16000), language="de").chunks())
    assert protocols()["elevenlabs-stream"].capability == "tts"
    settings.GATEWAY_LANE_SETTINGS = {lane_variable("tts-elevenlabs", "KEY"): "k"}
    engine = streaming_engine(lane("tts-elevenlabs", "elevenlabs-stream", [EL_VOICE], "eleven_multilingual_v2"))
    assert isinstance(engine, ElevenLabsSynthesizer) and engine.endpoint == "wss://api.elevenlabs.io"


# --- Cartesia -----------------------------------------------------------------------------

@pytest.mark.parametrize("encoding, rate, asked, byte", [
    ("alaw", 8000, "pcm_alaw", b"\xd5"), ("mulaw", 8000, "pcm_mulaw", b"\xff"),
    ("linear16", 16000, "pcm_s16le", b"\x03\x00"),
])
def test_cartesia_is_asked_in_the_calls_encoding_one_context_per_text(encoding, rate, asked, byte):
    with FakeCartesia(chunks=3, chunk_bytes=800) as fake:
        audio = b"".join(cartesia(fake).speak("Guten Tag, hier ist die Praxis.", audio=CallAudio(encoding, rate),
                                              language="de").chunks())
        connection = fake.connections[0]
        assert connection.closed.wait(5)
    [request] = connection.messages
    assert connection.path == "/tts/websocket" and connection.headers["authorization"] == f"Bearer {fake.key}"
    assert request["output_format"] == {"container": "raw", "encoding": asked, "sample_rate": rate}
    assert (request["transcript"], request["voice"], request["language"], request["model_id"], request["continue"]) == (
        "Guten Tag, hier ist die Praxis.", {"mode": "id", "id": CA_VOICE}, "de", "sonic-3", False)
    assert audio == byte * (2400 // len(byte))


def test_cartesia_is_cancelled_at_barge_in_with_its_cancel_message():
    hold = threading.Event()
    with FakeCartesia(chunks=3, chunk_bytes=800, hold=hold) as fake:
        stream = cartesia(fake).speak("Einen Moment bitte.", audio=CallAudio("alaw", 8000), language="de")
        chunks = stream.chunks()
        assert next(chunks) == b"\xd5" * 800
        stream.cancel()
        hold.set()
        assert fake.connections[0].closed.wait(5)
    connection = fake.connections[0]
    assert connection.cancelled == [connection.messages[0]["context_id"]]


def test_cartesia_speaks_an_agent_turn_in_one_context_flushed_sentence_by_sentence():
    with FakeCartesia(chunks=2, chunk_bytes=800) as fake:
        turn = cartesia(fake).open_turn(audio=CallAudio("alaw", 8000), language="de")
        first = b"".join(turn.speak("Guten Tag.").chunks())
        second = b"".join(turn.speak("Wie kann ich helfen?").chunks())
        turn.close()
        [connection] = fake.connections  # one connection for the turn
        assert connection.closed.wait(5)
    assert first == second == b"\xd5" * 1600  # each sentence's audio, and only its own
    assert len({message["context_id"] for message in connection.messages}) == 1
    assert [(m["transcript"], m["continue"], m.get("flush", False)) for m in connection.messages] == [
        ("Guten Tag. ", True, False), ("", True, True), ("Wie kann ich helfen? ", True, False), ("", True, True),
        ("", False, False)]
    assert not connection.hung_up and connection.cancelled == []


def test_a_cartesia_turn_cut_off_by_barge_in_is_cancelled_and_its_next_sentence_opens_another_context():
    hold = threading.Event()
    with FakeCartesia(chunks=3, chunk_bytes=800, hold=hold) as fake:
        turn = cartesia(fake).open_turn(audio=CallAudio("alaw", 8000), language="de")
        stream = turn.speak("Einen Moment bitte.")
        assert next(stream.chunks()) == b"\xd5" * 800
        stream.cancel()
        hold.set()
        cut = fake.connections[0]
        assert cut.closed.wait(5)
        again = b"".join(turn.speak("Ich sehe nach.").chunks())
        turn.close()
        assert fake.connections[1].closed.wait(5)
    assert cut.cancelled == [cut.messages[0]["context_id"]]
    assert again == b"\xd5" * 2400 and fake.connections[1].messages[0]["context_id"] != cut.cancelled[0]


def test_cartesias_refusals_are_lane_failures():
    with FakeCartesia() as fake:
        with pytest.raises(LaneFailure) as wrong_key:
            cartesia(fake, key="falsch").speak("Hallo.", audio=CallAudio("linear16", 16000), language="de")
        stream = CartesiaSynthesizer(lane("tts-cartesia-de", "cartesia-ws", ["unbekannt"], "sonic-3"),
                                     endpoint=f"{fake.base_url}/tts/websocket", key=fake.key, voice="").speak(
            "Hallo.", audio=CallAudio("linear16", 16000), language="de")
        with pytest.raises(LaneFailure) as bad_voice:
            list(stream.chunks())
    assert wrong_key.value.outcome == "rejected" and "401" in wrong_key.value.detail
    assert bad_voice.value.outcome == "rejected" and "unknown voice" in bad_voice.value.detail


# --- The shipped registry's statuses are true ----------------------------------------------

def test_every_callable_speech_lane_of_the_shipped_registry_has_a_module_that_speaks_it(settings):
    import json
    from pathlib import Path

    from registry_app.routing import USABLE_STATUSES

    document = json.loads((Path(__file__).parents[2] / "registry_app/data/registry.json").read_text())
    remote = [SnapshotLane.from_entry(entry) for entry in document["models"]
              if entry["capability"] in ("tts", "stt") and entry["hosting"] == "api"]
    callable_lanes = [lane for lane in remote if lane.status in USABLE_STATUSES]
    assert {lane.id for lane in callable_lanes} >= {"stt-deepgram", "tts-azure-de", "tts-elevenlabs", "tts-cartesia-de"}
    settings.GATEWAY_LANE_SETTINGS = {lane_variable(lane.id, "KEY"): "k" for lane in callable_lanes}
    for lane in callable_lanes:  # a key is all it takes: the module, the endpoint and a German voice are there
        engine = streaming_engine(lane)
        assert engine.protocol == lane.entry["params"]["protocol"] and "de" in lane.languages
        if lane.capability == "tts":
            assert engine.voice == lane.entry["params"]["voices"][0]


def test_a_normal_close_after_the_audio_ends_the_answer_and_one_without_audio_is_a_failure():
    """ElevenLabs closes the connection after its last audio (its SDK reads until then):
    `isFinal` is not needed to know the answer is whole."""
    from websockets.sync.server import serve

    def closes(socket, audio):
        socket.recv()  # the start
        if audio:
            socket.send('{"audio": "AgACAA==", "isFinal": null}')
        socket.close(1000)

    for audio in (True, False):
        with serve(lambda socket, audio=audio: closes(socket, audio), "127.0.0.1", 0) as server:
            threading.Thread(target=server.serve_forever, daemon=True).start()
            base = f"ws://127.0.0.1:{server.socket.getsockname()[1]}"
            stream = ElevenLabsSynthesizer(lane("tts-elevenlabs", "elevenlabs-stream", [EL_VOICE], "m"),
                                           endpoint=base, key="k", voice="").speak(
                "Hallo.", audio=CallAudio("linear16", 16000), language="de")
            if audio:
                assert b"".join(stream.chunks()) == b"\x02\x00\x02\x00"
            else:
                with pytest.raises(LaneFailure) as failure:
                    list(stream.chunks())
                assert failure.value.outcome == "bad_response"
