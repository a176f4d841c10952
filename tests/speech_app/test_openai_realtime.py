"""OpenAI Realtime (speech_app.providers.openai_realtime) against a fake realtime server on
loopback (tests/openai_realtime_fake.py), whose GA wire format is checked with the
`openai` SDK's realtime client (`client.realtime.connect`) and its event types."""
import asyncio
import base64

import numpy
import pytest
from openai import AsyncOpenAI

from agent_app.audio import alaw_encode
from registry_app.lanes.config import lane_variable
from registry_app.lanes.failover import LaneFailure
from registry_app.snapshot import SnapshotLane
from speech_app.providers.openai_realtime import RealtimeAgent, RealtimeSession
from speech_app.streaming import CallAudio, streaming_engine
from speech_app.voice_agent import AgentAudio, AgentEvent, AgentText, CallerStarted, CallerText, ResponseDone
from tests.openai_realtime_fake import FakeRealtime

KEY = "rt-test-key"
LANE_ENTRY = {
    "id": "voice-agent-realtime", "name": "OpenAI Realtime", "capability": "voice-agent", "provider": "OpenAI",
    "hosting": "api", "access": "api-key", "endpoint": "wss://api.openai.com/v1/realtime", "health": None,
    "cost": {"model": "per-minute", "unit": "conv-min", "eur": 0.28}, "status": "key-ready", "priority": 30,
    "quality_tier": "frontier", "latency_class": "fast",
    "params": {"streaming": True, "duplex": True, "languages": ["de"], "model": "gpt-realtime-1.5",
               "protocol": "openai-realtime", "voice": "marin"},
    "test": "", "source": "", "notes": "",
}
ALAW = CallAudio("alaw", 8000)


def loud(seconds: float, rate: int = 8000) -> numpy.ndarray:
    return (numpy.sin(2 * numpy.pi * 300 * numpy.arange(int(rate * seconds)) / rate) * 6000).astype(numpy.int16)


def quiet(seconds: float, rate: int = 8000) -> numpy.ndarray:
    return numpy.zeros(int(rate * seconds), dtype=numpy.int16)


def test_the_fake_speaks_the_ga_protocol_as_the_openai_sdk_reads_it():
    async def talk(fake: FakeRealtime) -> tuple[list, list]:
        client = AsyncOpenAI(api_key=KEY, base_url=fake.base_url.replace("ws://", "http://") + "/v1",
                             websocket_base_url=fake.base_url + "/v1")
        events = []
        async with client.realtime.connect(model="gpt-realtime-1.5") as connection:
            await connection.session.update(session={
                "type": "realtime", "output_modalities": ["audio"],
                "audio": {"input": {"format": {"type": "audio/pcmu"},
                                    "turn_detection": {"type": "server_vad", "silence_duration_ms": 300}},
                          "output": {"format": {"type": "audio/pcmu"}, "voice": "marin"}}})
            from agent_app.audio import mulaw_encode
            for samples in (loud(0.6), quiet(0.5)):
                await connection.input_audio_buffer.append(audio=base64.b64encode(mulaw_encode(samples)).decode())
            async for event in connection:
                events.append(event)
                if event.type == "response.done":
                    break
            # The beta protocol's audio format is refused.
            await connection.send({"type": "session.update", "session": {  # type: ignore[arg-type]
                "type": "realtime", "audio": {"input": {"format": "g711_ulaw"}}}})
            refused = await connection.recv()
        return events, [refused]

    with FakeRealtime(heard=["Guten Tag"], replies=[{"say": "Hallo, wie kann ich helfen?"}], seconds=0.3) as fake:
        events, (refused,) = asyncio.run(talk(fake))
        connection = fake.connections[0]
        assert connection.closed.wait(5)
    kinds = [event.type for event in events]
    assert kinds[:2] == ["session.created", "session.updated"]
    assert events[1].session.audio.output.format.type == "audio/pcmu"
    for kind in ("input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
                 "conversation.item.input_audio_transcription.completed", "response.created",
                 "response.output_audio_transcript.delta", "response.output_audio.delta",
                 "response.output_audio_transcript.done", "response.done"):
        assert kind in kinds, kind
    assert kinds.index("input_audio_buffer.speech_started") < kinds.index("response.created")
    heard = next(e for e in events if e.type == "conversation.item.input_audio_transcription.completed")
    assert heard.transcript == "Guten Tag"
    said = next(e for e in events if e.type == "response.output_audio_transcript.done")
    assert said.transcript == "Hallo, wie kann ich helfen?"
    assert events[-1].response.status == "completed"
    assert refused.type == "error" and "Invalid client event" in refused.error.message
    assert connection.headers["authorization"] == f"Bearer {KEY}" and connection.query["model"] == ["gpt-realtime-1.5"]
    assert fake.problems == []  # every event the fake sent is one of the SDK's types, as it has them


async def _collect(session: RealtimeSession, until, timeout: float = 10) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    async with asyncio.timeout(timeout):
        while not until(events):
            events.append(await session.next_event())
    return events


def test_our_client_configures_the_ga_session_and_hears_and_speaks_in_a_law():
    async def call(fake: FakeRealtime) -> list[AgentEvent]:
        agent = RealtimeAgent(SnapshotLane.from_entry(LANE_ENTRY), endpoint=fake.base_url, key=KEY)
        tools = [{"type": "function", "function": {"name": "end_call", "description": "Ende",
                                                   "parameters": {"type": "object", "properties": {}}}}]
        session = await agent.open(audio=ALAW, instructions="Sie sind die Assistenz.", tools=tools, language="de-AT")
        try:
            for samples in (loud(0.6), quiet(0.7)):
                await session.send_audio(alaw_encode(samples))
            return await _collect(session, lambda events: events and isinstance(events[-1], ResponseDone))
        finally:
            await session.close()

    with FakeRealtime(heard=["Ich möchte einen Termin."], replies=[{"say": "Gern, wann passt es Ihnen?"}],
                      seconds=0.4) as fake:
        events = asyncio.run(call(fake))
        connection = fake.connections[0]
    config = connection.session
    assert config["type"] == "realtime" and config["model"] == "gpt-realtime-1.5"
    assert config["audio"]["input"]["format"] == {"type": "audio/pcma"} == config["audio"]["output"]["format"]
    assert config["audio"]["input"]["transcription"]["language"] == "de"
    assert config["audio"]["output"]["voice"] == "marin"
    assert config["tools"] == [{"type": "function", "name": "end_call", "description": "Ende",
                                "parameters": {"type": "object", "properties": {}}}]
    assert connection.kinds()[0] == "session.update" and set(connection.kinds()) == {
        "session.update", "input_audio_buffer.append"}
    assert connection.errors == [] and fake.problems == []
    assert isinstance(events[0], CallerStarted) and CallerText("Ich möchte einen Termin.") in events
    assert AgentText("Gern, wann passt es Ihnen?", final=True) in events
    audio = b"".join(event.data for event in events if isinstance(event, AgentAudio))
    assert len(audio) == 3200  # 0.4 s of A-law at 8 kHz, as the server sent it
    assert events[-1] == ResponseDone("completed")


def test_a_server_speaking_the_retired_beta_protocol_is_refused():
    async def call(fake: FakeRealtime) -> None:
        agent = RealtimeAgent(SnapshotLane.from_entry(LANE_ENTRY), endpoint=fake.base_url + "/v1/realtime", key=KEY)
        session = await agent.open(audio=ALAW, instructions="", tools=[], language="de")
        try:
            for samples in (loud(0.6), quiet(0.7)):
                await session.send_audio(alaw_encode(samples))
            await _collect(session, lambda events: False)
        finally:
            await session.close()

    with FakeRealtime(heard=["Hallo"], replies=[{"say": "Hallo"}], beta=True) as fake:
        with pytest.raises(LaneFailure) as failed:
            asyncio.run(call(fake))
        assert fake.connections[0].path == "/v1/realtime"  # a URL ending with the path is used as it is
    assert failed.value.outcome == "rejected" and "beta" in failed.value.detail


def test_a_wrong_key_is_a_refused_lane(settings):
    async def call(fake: FakeRealtime) -> None:
        agent = RealtimeAgent(SnapshotLane.from_entry(LANE_ENTRY), endpoint=fake.base_url, key="falsch")
        await agent.open(audio=ALAW, instructions="", tools=[], language="de")

    with FakeRealtime() as fake:
        with pytest.raises(LaneFailure) as failed:
            asyncio.run(call(fake))
    assert failed.value.outcome == "rejected" and "401" in failed.value.detail


def test_the_lane_is_made_from_its_settings(settings):
    settings.GATEWAY_LANE_SETTINGS = {lane_variable("voice-agent-realtime", "ENDPOINT"): "ws://127.0.0.1:9/",
                                      lane_variable("voice-agent-realtime", "KEY"): KEY}
    engine = streaming_engine(SnapshotLane.from_entry(LANE_ENTRY))
    assert isinstance(engine, RealtimeAgent) and engine.endpoint == "ws://127.0.0.1:9"
    assert engine.model == "gpt-realtime-1.5"
    settings.GATEWAY_LANE_SETTINGS = {}
    with pytest.raises(LaneFailure) as failed:
        streaming_engine(SnapshotLane.from_entry(LANE_ENTRY))
    assert failed.value.outcome == "no_key"
