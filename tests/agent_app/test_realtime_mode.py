"""An assistant in realtime mode (`mode: "realtime"`, `realtime: {"lane": "voice-agent-realtime"}`):
a browser session and a Twilio phone call bridged to a fake OpenAI Realtime server on
loopback (tests/openai_realtime_fake.py, checked with the openai SDK): the disclosure
first, the model's audio heard, both sides in the transcript, a tool call through our
tool layer, barge-in cancelled at the provider; a failing lane leaves the call to the
pipeline with a note. The fields are checked on write and versioned."""
import asyncio
import base64
import contextlib
import json
import time
import uuid

import numpy
import pytest
from websockets.exceptions import ConnectionClosed

from agent_app.audio import WireFormat
from calls_app.models import Call
from registry_app.lanes.config import lane_variable
from tests.agent_app.conftest import Caller, dial, grant, silence, spoken
from tests.agent_app.phone import ACCOUNT, MediaStream, new_call_sid, stream_of
from tests.agent_app.test_streaming_voice import usage_of
from tests.conftest import error_of
from tests.openai_realtime_fake import FakeRealtime, tone
from tests.speech_app.speech_server import load

LANE = "voice-agent-realtime"
REALTIME = {"mode": "realtime", "realtime": {"lane": LANE}}
SAID = "Ich hätte gerne einen Rückruf."
REPLY = "Sehr gern, das habe ich für Sie notiert."
LATER = "Und wann haben Sie geöffnet?"
HOURS = "Wir haben montags bis freitags von acht bis achtzehn Uhr geöffnet, und samstags nach Vereinbarung."
STOP = "Danke, das reicht."
BYE = "Gern geschehen."


def _use_fake(settings, fake):
    settings.GATEWAY_LANE_SETTINGS = {lane_variable(LANE, "KEY"): fake.key,
                                      lane_variable(LANE, "ENDPOINT"): fake.base_url}


def _realtime_assistant(api, **more):
    response = api.post("/v2/assistants", {"name": "Empfang", **REALTIME, **more}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


# --- The fields -----------------------------------------------------------------------------

@pytest.mark.django_db
def test_mode_and_realtime_lane_are_checked_on_write_and_versioned(api_a):
    load()
    unknown = api_a.post("/v2/assistants", {"name": "E", "mode": "realtime", "realtime": {"lane": "rt-gibt-es-nicht"}},
                         format="json")
    assert unknown.status_code == 400 and "rt-gibt-es-nicht" in unknown.content.decode()
    assert LANE in unknown.content.decode()  # what there is
    not_agent = api_a.post("/v2/assistants", {"name": "E", "mode": "realtime", "realtime": {"lane": "stt-deepgram"}},
                           format="json")
    assert not_agent.status_code == 400 and "stt-deepgram" in not_agent.content.decode()
    no_lane = api_a.post("/v2/assistants", {"name": "E", "mode": "realtime"}, format="json")
    assert no_lane.status_code == 400 and "realtime" in error_of(no_lane)["details"]
    bad_mode = api_a.post("/v2/assistants", {"name": "E", "mode": "echtzeit"}, format="json")
    assert bad_mode.status_code == 400 and "mode" in error_of(bad_mode)["details"]
    extra = api_a.post("/v2/assistants", {"name": "E", **REALTIME, "realtime": {"lane": LANE, "x": 1}}, format="json")
    assert extra.status_code == 400 and "realtime.x" in error_of(extra)["details"]

    created = _realtime_assistant(api_a)
    assert (created["mode"], created["realtime"]) == ("realtime", {"lane": LANE})
    assert api_a.post("/v2/assistants", {"name": "P"}, format="json").json()["mode"] == "pipeline"
    url = f"/v2/assistants/{created['id']}"
    assert api_a.post(url + "/publish", {}, format="json").status_code in (200, 201)
    back = api_a.patch(url, {"mode": None}, format="json")  # null: the pipeline, the lane kept
    assert back.status_code == 200, back.content
    assert (back.json()["mode"], back.json()["realtime"]) == ("pipeline", {"lane": LANE})
    assert api_a.patch(url, {"mode": "realtime"}, format="json").status_code == 200  # the kept lane serves
    assert api_a.patch(url, {"mode": "pipeline", "realtime": None}, format="json").json()["realtime"] == {}
    versions = api_a.get(url + "/versions").json()
    assert versions["versions"][0]["assistant"]["mode"] == "realtime"
    assert versions["versions"][0]["assistant"]["realtime"] == {"lane": LANE}
    assert {change["field"] for change in versions["draftChanges"]} >= {"mode", "realtime.lane"}


@pytest.mark.django_db
def test_the_admin_edits_mode_and_lane_in_german_checked_as_through_the_api(owner, tenant_a):
    from django.test import Client

    from console.assistants.models import Assistant
    from tests.assistants.test_assistant_admin import FORM

    load()
    client = Client()
    client.force_login(owner)
    page = client.get("/admin/assistants/assistant/add/").content.decode()
    assert "Gesprächsmodus" in page and "Realtime-Lane" in page and "Realtime (Sprache zu Sprache)" in page
    refused = client.post("/admin/assistants/assistant/add/", {
        **FORM, "tenant": tenant_a.pk, "mode": "realtime", "realtime_lane": "rt-gibt-es-nicht"})
    assert refused.status_code == 200 and "rt-gibt-es-nicht" in refused.content.decode()
    assert not Assistant.objects.exists()
    client.post("/admin/assistants/assistant/add/", {**FORM, "tenant": tenant_a.pk, "mode": "realtime",
                                                     "realtime_lane": LANE})
    assistant = Assistant.objects.get()
    assert (assistant.mode, assistant.realtime) == ("realtime", {"lane": LANE})
    edit = client.get(f"/admin/assistants/assistant/{assistant.pk}/change/").content.decode()
    assert f'value="{LANE}"' in edit


def test_the_model_is_neither_heard_nor_played_before_the_disclosure_was_heard():
    from types import SimpleNamespace

    from agent_app.realtime import RealtimeBridge
    from speech_app.voice_agent import AgentAudio

    class Session:
        def __init__(self):
            self.sent = []

        async def send_audio(self, data):
            self.sent.append(data)

    async def check():
        conversation = SimpleNamespace(wire=WireFormat("alaw", 8000), loop=asyncio.get_running_loop(),
                                       barge_in_allowed=False)
        bridge = RealtimeBridge(conversation, LANE)
        bridge.session = session = Session()
        await bridge.hear(b"\xd5" * 160)
        await bridge._on(AgentAudio(b"\x55" * 160))
        before = (list(session.sent), bridge.queue.qsize())
        conversation.barge_in_allowed = True  # the disclosure's audio was handed over in full
        await bridge.hear(b"\xd5" * 160)
        await bridge._on(AgentAudio(b"\x55" * 160))
        return before, (session.sent, bridge.queue.qsize())

    before, after = asyncio.run(check())
    assert before == ([], 0)
    assert after == ([b"\xd5" * 160], 1)  # A-law as it came, both ways


# --- A browser session ------------------------------------------------------------------------

async def _browser(url):
    async with dial(url) as ws:
        caller = Caller(ws)
        await caller.until("session.started")
        opening = await caller.until("agent.speaking")
        await caller.until("agent.done")
        opening_audio = sum(len(f) for _, f in caller.frames if isinstance(f, bytes))
        await caller.stream(spoken(SAID) + silence(1.0))
        final = await caller.until("transcript.final")
        note = await caller.until("agent.note")
        reply = await caller.until("agent.speaking")
        await caller.until("agent.done")
        await caller.stream(spoken(LATER) + silence(1.0))
        await caller.until("agent.speaking")  # the long answer, sent in real time
        speaking_at = len(caller.frames)
        # The caller speaks into it: the answer stops.
        interrupting = asyncio.ensure_future(caller.stream(spoken(STOP) + silence(1.0)))
        await caller.until("agent.interrupted")
        interrupted_at = len(caller.frames)
        await interrupting
        await caller.until("agent.done")  # the answer to the interruption
        await ws.send('{"type": "end"}')
        await ws.wait_closed()
        return caller, opening, opening_audio, final, note, reply, speaking_at, interrupted_at


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_browser_session_runs_speech_to_speech_with_the_disclosure_first(
        agent_server, api_a, tenant_a, instant_speech, settings):
    load()
    replies = [{"tool": "create_callback", "arguments": {"phone": "0171 2345678", "reason": "Rückruf"}},
               {"say": REPLY, "seconds": 0.8}, {"say": HOURS, "seconds": 8.0, "pace": 1.0},
               {"say": BYE, "seconds": 0.5}]
    with FakeRealtime(heard=[SAID, LATER, STOP], replies=replies) as fake:
        _use_fake(settings, fake)
        assistant = _realtime_assistant(api_a, tools=["create_callback"])
        session = grant(api_a, agent_server.port, assistant=assistant["id"])
        caller, opening, opening_audio, final, note, reply, speaking_at, interrupted_at = asyncio.run(
            _browser(session["url"]))
        connection = fake.connections[0]
        assert connection.closed.wait(10)
    # The disclosure is ours and comes first; the model was heard only after it.
    assert opening["text"].startswith(tenant_a.disclosure_text.strip())
    assert opening_audio > 16000
    config = connection.session
    assert config["type"] == "realtime" and config["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
    assert "Begrüßen Sie ihn nicht noch einmal" in config["instructions"]
    assert [tool["name"] for tool in config["tools"]] == ["create_callback"]
    assert final["text"] == SAID and REPLY.startswith(reply["text"])  # the transcript as far as it came
    assert note["text"].startswith("Tool create_callback")
    # The model's audio (24 kHz PCM) reached the caller at 16 kHz: about 0.8 s of it for the reply.
    reply_at = next(i for i, (_, f) in enumerate(caller.frames) if f is reply)
    done_at = next(i for i, (_, f) in enumerate(caller.frames) if i > reply_at and isinstance(f, dict)
                   and f["type"] == "agent.done")
    reply_audio = b"".join(f for _, f in caller.frames[reply_at:done_at] if isinstance(f, bytes))
    assert abs(len(reply_audio) - 0.8 * 32000) < 3200
    samples = numpy.frombuffer(reply_audio, dtype="<i2").astype(float)
    spectrum = numpy.abs(numpy.fft.rfft(samples))
    assert abs(numpy.argmax(spectrum) * 16000 / len(samples) - 770) < 10  # the fake's tone, resampled
    # Barge-in: the fake was told to cancel, and the long answer stopped short.
    kinds = connection.kinds()
    assert kinds.count("response.cancel") == 1 and kinds.count("response.create") == 1  # after the tool
    cut_audio = sum(len(f) for _, f in caller.frames[speaking_at:interrupted_at] if isinstance(f, bytes))
    assert cut_audio < 8.0 * 32000 * 0.8
    assert connection.errors == [] and fake.problems == []
    # The transcript: both sides, in order, with the tool's and the interruption's notes; booked once.
    call = Call.objects.with_transcript().get(pk=session["callId"])
    lines = [(entry.role, entry.text) for entry in call.transcript_entries.all()]
    assert lines[0] == ("assistant", opening["text"])
    assert ("user", SAID) in lines and ("assistant", REPLY) in lines and ("user", STOP) in lines
    assert lines.index(("user", SAID)) < lines.index(("assistant", REPLY)) < lines.index(("user", LATER))
    assert ("system", "Der Anrufer hat die Assistenz unterbrochen.") in lines
    assert any(role == "system" and text.startswith("Tool create_callback") for role, text in lines)
    assert (call.status, call.disclosed) == ("completed", True)
    usage = usage_of(LANE)  # counted as the session closes, after the call
    assert usage.audio_seconds > 0 and usage.failures == 0 and float(usage.eur) > 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_models_end_call_ends_the_call_after_what_it_said(agent_server, api_a, instant_speech, settings):
    load()
    replies = [{"say": BYE, "seconds": 0.5}, {"tool": "end_call", "arguments": {}}]
    with FakeRealtime(heard=[STOP, STOP], replies=replies) as fake:
        _use_fake(settings, fake)
        # The model says goodbye; asked again, it calls end_call.
        assistant = _realtime_assistant(api_a, tools=["end_call"])
        session = grant(api_a, agent_server.port, assistant=assistant["id"])

        async def talk():
            async with dial(session["url"]) as ws:
                caller = Caller(ws)
                await caller.until("agent.done")  # the opening
                await caller.stream(spoken(STOP) + silence(1.0))
                await caller.until("agent.done")  # the goodbye
                streaming = asyncio.ensure_future(caller.stream(spoken(STOP) + silence(1.0)))
                note = await caller.until("agent.note")
                await ws.wait_closed()
                with contextlib.suppress(ConnectionClosed):  # the call ended while the caller's silence still went out
                    await streaming
                return note, ws.close_code

        note, close_code = asyncio.run(talk())
        connection = fake.connections[0]
        assert connection.closed.wait(10)
    assert note["text"].startswith("Tool end_call") and close_code == 1000
    assert "response.create" not in connection.kinds()  # the call ended instead of another answer
    call = Call.objects.with_transcript().get(pk=session["callId"])
    assert call.status == "completed" and ("assistant", BYE) in [(e.role, e.text) for e in call.transcript_entries.all()]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_model_transfers_only_to_the_assistants_targets_and_gets_tool_text_as_data(
        agent_server, api_a, instant_speech, settings):
    load()
    replies = [{"tool": "transfer_call", "arguments": {"target": "+49 170 0000000"}}, {"say": REPLY, "seconds": 0.3}]
    with FakeRealtime(heard=[SAID], replies=replies) as fake:
        _use_fake(settings, fake)
        assistant = _realtime_assistant(api_a, tools=["transfer_call"],
                                        transferTargets=[{"name": "Zentrale", "e164": "030 901820"}])
        session = grant(api_a, agent_server.port, assistant=assistant["id"])

        async def talk():
            async with dial(session["url"]) as ws:
                caller = Caller(ws)
                await caller.until("agent.done")  # the opening
                await caller.stream(spoken(SAID) + silence(1.0))
                note = await caller.until("agent.note")
                await caller.until("agent.done")  # the call goes on: the model answers again
                await ws.send('{"type": "end"}')
                await ws.wait_closed()
                return note

        note = asyncio.run(talk())
        connection = fake.connections[0]
        assert connection.closed.wait(10)
    assert note["text"].startswith("Tool transfer_call") and "error" in note["text"]
    outputs = [event["item"] for event in connection.received if event.get("type") == "conversation.item.create"]
    assert [item["type"] for item in outputs] == ["function_call_output"]
    result = json.loads(outputs[0]["output"])  # the tool's result as data, as the pipeline gives it
    assert result["ok"] is False
    assert "Zentrale" in connection.session["instructions"]  # the targets the model may name
    call = Call.objects.with_transcript().get(pk=session["callId"])
    assert not any(e.text.startswith("Weitergeleitet") for e in call.transcript_entries.all())


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_failing_realtime_lane_leaves_the_call_to_the_pipeline_with_a_note(
        agent_server, api_a, instant_speech, settings):
    load()
    with FakeRealtime(status=503) as fake:
        _use_fake(settings, fake)
        assistant = _realtime_assistant(api_a)
        session = grant(api_a, agent_server.port, assistant=assistant["id"])

        async def talk():
            async with dial(session["url"]) as ws:
                caller = Caller(ws)
                opening = await caller.until("agent.speaking")
                await caller.until("agent.done")
                await ws.send('{"type": "end"}')
                await ws.wait_closed()
                return opening

        opening = asyncio.run(talk())
    assert opening["text"]  # the opening is spoken as ever
    call = Call.objects.with_transcript().get(pk=session["callId"])
    notes = [entry.text for entry in call.transcript_entries.all() if entry.role == "system"]
    assert notes == [f"Realtime lane {LANE} cannot be called (server_error): the pipeline answers."]
    assert usage_of(LANE).failures == 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_realtime_lane_lost_mid_call_hands_the_call_to_the_pipeline(
        agent_server, api_a, instant_speech, speech_server, settings):
    from gateway_app.providers.mock import mock_answer
    from tests.speech_app.speech_server import stt_lane

    settings.GATEWAY_MAX_EUR = 0.01
    hearing = speech_server(text=LATER)  # the pipeline's recogniser, once the lane is gone
    load(stt_lane("stt-whisper-gpu", hearing.url))
    with FakeRealtime(heard=[SAID], replies=[{"close": True}]) as fake:
        _use_fake(settings, fake)
        assistant = _realtime_assistant(api_a)
        session = grant(api_a, agent_server.port, assistant=assistant["id"])

        async def talk():
            async with dial(session["url"]) as ws:
                caller = Caller(ws)
                await caller.until("agent.done")  # the opening
                await caller.stream(spoken(SAID) + silence(1.0))
                first = await caller.until("transcript.final")  # the session heard it, then went away
                await caller.stream(spoken(LATER) + silence(1.0))
                second = await caller.until("transcript.final")  # heard here
                reply = await caller.until("agent.speaking")
                await caller.until("agent.done")
                await ws.send('{"type": "end"}')
                await ws.wait_closed()
                return first, second, reply

        first, second, reply = asyncio.run(talk())
    assert (first["text"], second["text"]) == (SAID, LATER) and len(hearing.requests) >= 1
    assert reply["text"] == mock_answer(LATER, language="de")  # the pipeline's model answered
    call = Call.objects.with_transcript().get(pk=session["callId"])
    notes = [e.text for e in call.transcript_entries.all() if e.role == "system"]
    assert notes == [f"Realtime lane {LANE} failed (connection_error): the pipeline answers."]
    assert usage_of(LANE).failures == 1


# --- A Twilio phone call: A-law both ways, unconverted; barge-in clears the carrier ----------

async def _phone_call(port, twiml, call_sid, asked, stop):
    from tests.agent_app.test_twilio_call import on_test_server

    url, token = stream_of(twiml)
    wire = WireFormat("alaw", 8000)
    quiet = wire.from_pcm(numpy.zeros(320, dtype="<i2").tobytes(), 16000)  # 20 ms
    async with MediaStream(on_test_server(url, port), call_sid, token, "alaw") as carrier:
        await carrier.start()
        await carrier.media_until(quiet, lambda: len(carrier.of("mark")) >= 2)  # the opening's parts
        opening_media = len(carrier.of("media"))
        await carrier.media(asked)
        await carrier.media_until(quiet, lambda: len(carrier.of("mark")) >= 3)  # the answer, in full
        answer_media = len(carrier.of("media"))
        await carrier.media(asked)  # asks again: the long answer comes
        await carrier.media_until(quiet, lambda: len(carrier.of("media")) > answer_media + 100)  # 2 s: the fake is done
        await carrier.media(stop)  # and speaks into it
        await carrier.media_until(quiet, lambda: carrier.of("clear") and len(carrier.of("mark")) >= 4)
        await carrier.send({"event": "stop", "streamSid": carrier.stream_sid,
                            "stop": {"accountSid": ACCOUNT, "callSid": call_sid}})
        await carrier.ws.wait_closed()
        return carrier, opening_media, answer_media


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_twilio_call_in_realtime_mode_in_a_law_with_barge_in(
        agent_server, client, tenant_a, twilio_carrier, called_number, api_a, settings):
    from tests.agent_app.test_twilio_call import ASKED, incoming

    load()
    # The long answer comes whole at once (8x real time): the caller interrupts what is still being played.
    replies = [{"say": REPLY, "seconds": 0.5}, {"say": HOURS, "seconds": 8.0, "pace": 8.0}, {"say": BYE, "seconds": 0.3}]
    with FakeRealtime(heard=[ASKED, LATER, STOP], replies=replies) as fake:
        _use_fake(settings, fake)
        _realtime_assistant(api_a)
        call_sid = new_call_sid()
        wire = WireFormat("alaw", 8000)
        asked, stop = spoken(ASKED, wire), spoken(STOP, wire)
        carrier, opening_media, answer_media = asyncio.run(
            _phone_call(agent_server.port, incoming(client, call_sid), call_sid, asked, stop))
        connection = fake.connections[0]
        assert connection.closed.wait(10)
    assert connection.session["audio"]["input"]["format"] == {"type": "audio/pcma"}
    assert connection.session["audio"]["output"]["format"] == {"type": "audio/pcma"}
    assert asked in bytes(connection.audio)  # the carrier's bytes, in order, unconverted
    answer = b"".join(base64.b64decode(m["media"]["payload"]) for _, m in carrier.of("media")[opening_media:answer_media])
    assert tone({"type": "audio/pcma"}, 770, 0.5) in answer  # the model's A-law as it came
    # The provider was done with it (nothing to cancel there); our queue and the carrier's buffer were cleared.
    assert connection.kinds().count("response.cancel") == 0 and carrier.of("clear")
    played = sum(len(base64.b64decode(m["media"]["payload"])) for _, m in carrier.of("media")[answer_media:])
    assert played < 8.0 * 8000
    assert connection.errors == [] and fake.problems == []
    call = Call.objects.with_transcript().get(carrier_call_id=call_sid)
    lines = [(entry.role, entry.text) for entry in call.transcript_entries.all()]
    assert lines[0][0] == "assistant" and lines[0][1].startswith(tenant_a.disclosure_text.strip())
    assert ("user", ASKED) in lines and ("assistant", REPLY) in lines and ("assistant", HOURS) in lines
    assert lines.index(("assistant", HOURS)) < lines.index(("system", "Der Anrufer hat die Assistenz unterbrochen."))
    assert Call.objects.filter(carrier_call_id=call_sid).count() == 1 and call.ended_at is not None


def _loud_seconds(pcm, rate):
    samples = numpy.frombuffer(pcm, dtype="<i2").astype(float)
    frame = rate // 50
    frames = samples[: len(samples) // frame * frame].reshape(-1, frame)
    return float((numpy.sqrt((frames ** 2).mean(axis=1)) > 400).sum()) / 50


# --- Asterisk's AudioSocket: 8 kHz PCM, resampled to the protocol's 24 kHz and back ------------

@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_audiosocket_call_in_realtime_mode_is_resampled_both_ways(audiosocket, client, tenant_a, api_a, settings):
    from calls_app.services import carrier_create
    from console.numbers.services import number_create
    from tests.agent_app.phone import CALLED, AudioSocketPeer
    from tests.agent_app.test_audiosocket import ASKED, PCM8K, register

    load()
    _, secret = carrier_create(carrier_id="ast1", kind="asterisk")
    number_create(tenant=tenant_a, e164=CALLED)
    asked = spoken(ASKED, PCM8K)

    async def call(call_uuid):
        async with AudioSocketPeer(audiosocket.port) as peer:
            await peer.send(0x01, call_uuid.bytes)
            await peer.audio_until(lambda: peer.audio_in() and time.monotonic() - peer.audio_in()[-1][0] > 1.0)
            await peer.audio(asked)
            asked_at = time.monotonic()
            await peer.audio_until(lambda: sum(len(p) for _, p in peer.audio_in(asked_at)) >= 0.6 * 16000)
            await peer.send(0x00)
            await asyncio.wait_for(peer.closed.wait(), 30)
            return b"".join(payload for _, payload in peer.audio_in(asked_at))

    with FakeRealtime(heard=[ASKED], replies=[{"say": REPLY, "seconds": 0.6}]) as fake:
        _use_fake(settings, fake)
        _realtime_assistant(api_a)
        call_uuid = uuid.UUID(register(client, secret).content.decode())
        answer = asyncio.run(call(call_uuid))
        connection = fake.connections[0]
        assert connection.closed.wait(10)
    assert connection.session["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
    # The caller's speech reached the session at 24 kHz, as long as it was said at 8 kHz.
    assert abs(_loud_seconds(bytes(connection.audio), 24000) - _loud_seconds(asked, 8000)) < 0.2
    samples = numpy.frombuffer(answer, dtype="<i2").astype(float)
    loud = samples[numpy.abs(samples) > 0]
    spectrum = numpy.abs(numpy.fft.rfft(loud))
    assert abs(numpy.argmax(spectrum) * 8000 / len(loud) - 770) < 15  # the model's tone, at 8 kHz
    call_row = Call.objects.with_transcript().get()
    assert ("user", ASKED) in [(e.role, e.text) for e in call_row.transcript_entries.all()]
