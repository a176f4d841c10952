"""An assistant whose voice is a streaming lane's (`tts-azure-de:de-DE-KatjaNeural`) and whose
transcriber is Deepgram (`stt-deepgram`), against fakes of both on loopback: browser
sessions and Twilio phone calls (μ-law, A-law: unconverted both ways); when a provider
fails, this process's engines speak or hear, with a note in the transcript. Named
voices and transcribers are checked when an assistant is written."""
import asyncio
import base64
import time

import numpy
import pytest

from agent_app.audio import WireFormat
from calls_app.models import Call
from gateway_app.models import LaneUsage
from gateway_app.providers.mock import mock_answer
from registry_app.lanes.config import lane_variable
from registry_app.models import LaneCooldown
from tests.agent_app.conftest import grant, silence, spoken
from tests.agent_app.phone import ACCOUNT, MediaStream, new_call_sid, stream_of
from tests.agent_app.test_conversation import _conversation
from tests.azure_tts_fake import FakeAzureTts
from tests.deepgram_fake import FakeDeepgram
from tests.speech_app.speech_server import load, stt_lane

SAID = "Ich hätte gerne einen Termin am Montag."


def usage_of(lane_id):
    """The lane's usage once the call's recogniser thread has counted it (polled: it ends after the call)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        usage = LaneUsage.objects.filter(lane_id=lane_id).first()
        if usage is not None:
            return usage
        time.sleep(0.05)  # polling with a deadline for another thread's write
    raise AssertionError(f"no usage of {lane_id}")
VOICE = "tts-azure-de:de-DE-KatjaNeural"


def assistant_with(api, voice):
    return api.post("/v2/assistants", {"name": "Empfang", "voice": voice}, format="json")


@pytest.mark.django_db
def test_a_named_voice_must_be_a_voice_of_a_tts_lane_of_the_registry(api_a):
    load()
    unknown_voice = assistant_with(api_a, "tts-azure-de:de-DE-Nobody")
    assert unknown_voice.status_code == 400 and "de-DE-Nobody" in unknown_voice.content.decode()
    assert "de-DE-KatjaNeural" in unknown_voice.content.decode()  # what it has
    unknown_lane = assistant_with(api_a, "tts-nowhere:de-DE-KatjaNeural")
    assert unknown_lane.status_code == 400 and "tts-nowhere" in unknown_lane.content.decode()
    not_tts = assistant_with(api_a, "stt-deepgram:nova-3")
    assert not_tts.status_code == 400 and "stt-deepgram" in not_tts.content.decode()
    assert assistant_with(api_a, VOICE).json()["voice"] == VOICE
    assert assistant_with(api_a, "de+f3").status_code == 201  # a bare voice keeps its meaning


def _session(api_a, agent_server, settings, azure, speech_server, max_eur=0.01):
    settings.GATEWAY_MAX_EUR = max_eur
    hearing = speech_server(text=SAID)
    load(stt_lane("stt-whisper-gpu", hearing.url))
    settings.GATEWAY_LANE_SETTINGS = {lane_variable("tts-azure-de", "KEY"): azure.key,
                                      lane_variable("tts-azure-de", "ENDPOINT"): azure.base_url}
    assistant = assistant_with(api_a, VOICE).json()
    session = grant(api_a, agent_server.port, assistant=assistant["id"])
    return asyncio.run(_conversation(session["url"], spoken(SAID) + silence(1.0))), session


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_browser_session_is_spoken_by_azure_in_the_wires_encoding(
        agent_server, api_a, instant_speech, speech_server, settings):
    with FakeAzureTts(chunks=3, chunk_bytes=1600) as azure:
        (caller, _, opening, final, reply, _), session = _session(api_a, agent_server, settings, azure, speech_server)
        requests = list(azure.requests)
    assert final["text"] == SAID and reply["text"] and mock_answer(SAID, language="de").startswith(reply["text"])
    assert {(r.voice, r.language, r.output_format) for r in requests} == {
        ("de-DE-KatjaNeural", "de-DE", "raw-16khz-16bit-mono-pcm")}
    spoken_texts = " ".join(r.text for r in requests)
    assert reply["text"].split(".")[0] in spoken_texts and "Acme" in spoken_texts
    audio = b"".join(frame for _, frame in caller.frames if isinstance(frame, bytes))
    assert audio == b"\x01\x00" * (len(audio) // 2) and len(audio) == 4800 * len(requests)  # Azure's, all of it
    call = Call.objects.with_transcript().get(pk=session["callId"])
    assert [entry.role for entry in call.transcript_entries.all()] == ["assistant", "user", "assistant"]
    usage = LaneUsage.objects.get(lane_id="tts-azure-de")
    assert (usage.requests, usage.failures, usage.characters) == (len(requests), 0, len(spoken_texts) - len(requests) + 1)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_when_azure_fails_the_local_voice_speaks_and_the_transcript_says_so(
        agent_server, api_a, instant_speech, speech_server, settings):
    with FakeAzureTts(status=503) as azure:
        (caller, _, opening, final, reply, _), session = _session(api_a, agent_server, settings, azure, speech_server)
    assert azure.requests  # asked first
    assert final["text"] == SAID and reply["text"] and mock_answer(SAID, language="de").startswith(reply["text"])
    audio = b"".join(frame for _, frame in caller.frames if isinstance(frame, bytes))
    assert len(audio) > 32000 and audio != b"\x01\x00" * (len(audio) // 2)  # eSpeak NG spoke
    call = Call.objects.with_transcript().get(pk=session["callId"])
    notes = [entry.text for entry in call.transcript_entries.all() if entry.role == "system"]
    assert notes == ["Sprachausgabe tts-azure-de ausgefallen (server_error): die lokale Stimme spricht."]
    assert len(azure.requests) == 1  # then it cooled down: the rest went straight to the local voice
    assert LaneCooldown.objects.filter(lane_id="tts-azure-de").exists()
    assert LaneUsage.objects.get(lane_id="tts-azure-de").failures == 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_named_voice_is_the_operators_choice_whatever_the_routers_budget(
        agent_server, api_a, instant_speech, speech_server, settings):
    with FakeAzureTts() as azure:
        (caller, _, _, _, reply, _), session = _session(api_a, agent_server, settings, azure, speech_server,
                                                        max_eur=0)
    assert azure.requests and reply["text"] and mock_answer(SAID, language="de").startswith(reply["text"])
    assert float(LaneUsage.objects.get(lane_id="tts-azure-de").eur) > 0  # counted at its price


# --- Heard by Deepgram -------------------------------------------------------------------

TRANSCRIBER = {"lane": "stt-deepgram", "keyterms": ["Montag", "Termin"]}


@pytest.mark.django_db
def test_a_transcriber_must_be_a_streaming_stt_lane(api_a):
    load()
    for bad, named in (({"lane": "stt-vosk-de"}, "stt-vosk-de"), ({"lane": "tts-azure-de"}, "tts-azure-de"),
                       ({"lane": "stt-deepgram", "keyterms": ["x" * 101]}, "keyterms"),
                       ({"lane": "stt-deepgram", "extra": 1}, "extra"), ({"lane": ""}, "transcriber"),
                       ({"keyterms": "Termin"}, "keyterms")):
        response = api_a.post("/v2/assistants", {"name": "Empfang", "transcriber": bad}, format="json")
        assert response.status_code == 400 and named in response.content.decode(), bad
    created = api_a.post("/v2/assistants", {"name": "Empfang", "transcriber": TRANSCRIBER}, format="json").json()
    assert created["transcriber"] == TRANSCRIBER
    assert api_a.post("/v2/assistants", {"name": "Ohne"}, format="json").json()["transcriber"] == {}
    # Key terms without a lane: the local recogniser's vocabulary (Whisper's prompt).
    local = api_a.post("/v2/assistants", {"name": "Lokal", "transcriber": {"keyterms": ["Rückruf", " Rückruf"]}},
                       format="json")
    assert local.status_code == 201 and local.json()["transcriber"] == {"keyterms": ["Rückruf"]}


def _heard_session(api_a, agent_server, settings, azure, deepgram, speech_server):
    settings.GATEWAY_MAX_EUR = 0.01
    local = speech_server(text="vom lokalen Erkenner gehört")  # the floor: this text only if it was asked
    load(stt_lane("stt-whisper-gpu", local.url))
    settings.GATEWAY_LANE_SETTINGS = {
        lane_variable("tts-azure-de", "KEY"): azure.key, lane_variable("tts-azure-de", "ENDPOINT"): azure.base_url,
        lane_variable("stt-deepgram", "KEY"): deepgram.key,
        lane_variable("stt-deepgram", "ENDPOINT"): deepgram.base_url}
    assistant = api_a.post("/v2/assistants", {"name": "Empfang", "voice": VOICE, "transcriber": TRANSCRIBER},
                           format="json").json()
    session = grant(api_a, agent_server.port, assistant=assistant["id"])
    return asyncio.run(_conversation(session["url"], spoken(SAID) + silence(1.0))), session, local


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_browser_session_heard_by_deepgram_and_spoken_by_azure(
        agent_server, api_a, instant_speech, speech_server, settings):
    with FakeAzureTts(chunks=2, chunk_bytes=1600) as azure, \
            FakeDeepgram(utterances=[SAID], seconds_per_word=0.25) as deepgram:
        (caller, _, _, final, reply, _), session, local = _heard_session(
            api_a, agent_server, settings, azure, deepgram, speech_server)
        connection = deepgram.connections[0]
        assert connection.closed.wait(5)  # closed at the call's end
    assert final["text"] == SAID and reply["text"] and mock_answer(SAID, language="de").startswith(reply["text"])
    assert local.requests == []  # Deepgram heard it; nothing was recognised here
    partials = [frame for _, frame in caller.frames if isinstance(frame, dict) and frame["type"] == "transcript.partial"]
    assert partials and partials[0]["text"] == "Ich"  # Deepgram's interim results, word by word
    assert (connection.param("encoding"), connection.param("sample_rate")) == ("linear16", "16000")
    assert connection.query["keyterm"] == ["Montag", "Termin"] and connection.controls[-1] == "CloseStream"
    assert len(connection.audio) >= len(spoken(SAID))  # the caller's audio as it came on the wire
    assert any(reply["text"].split(".")[0] in request.text for request in azure.requests)
    call = Call.objects.with_transcript().get(pk=session["callId"])
    assert [(e.role, e.text) for e in call.transcript_entries.all()][1] == ("user", SAID)
    usage = usage_of("stt-deepgram")  # the audio sent, in audio minutes at its price
    assert usage.audio_seconds == pytest.approx(len(connection.audio) / 32000)
    assert float(usage.eur) == pytest.approx(0.004 * usage.audio_seconds / 60, abs=1e-6)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_when_deepgram_stops_answering_the_turn_is_heard_here_and_the_transcript_says_so(
        agent_server, api_a, instant_speech, speech_server, settings):
    with FakeAzureTts() as azure, FakeDeepgram(stall=True) as deepgram:
        (caller, _, _, final, reply, _), session, local = _heard_session(
            api_a, agent_server, settings, azure, deepgram, speech_server)
    assert final["text"] == "vom lokalen Erkenner gehört" and len(local.requests) == 1
    call = Call.objects.with_transcript().get(pk=session["callId"])
    notes = [e.text for e in call.transcript_entries.all() if e.role == "system"]
    assert notes == ["Spracherkennung stt-deepgram ausgefallen (timeout): die lokale Spracherkennung hört."]
    assert usage_of("stt-deepgram").failures == 1
    assert LaneCooldown.objects.filter(lane_id="stt-deepgram").exists()  # the next calls are heard here


# --- A phone call: the carrier's G.711 goes to Deepgram and comes from Azure unconverted -----

async def _phone_call(port, twiml, call_sid, law, asked):
    from tests.agent_app.test_twilio_call import on_test_server

    url, token = stream_of(twiml)
    wire = WireFormat(law, 8000)
    quiet = wire.from_pcm(numpy.zeros(320, dtype="<i2").tobytes(), 16000)  # 20 ms
    async with MediaStream(on_test_server(url, port), call_sid, token, law) as carrier:
        await carrier.start()
        await carrier.media_until(quiet, lambda: len(carrier.of("mark")) >= 2)  # the opening's parts
        opening_media = len(carrier.of("media"))
        await carrier.media(asked)
        asked_at = time.monotonic()
        await carrier.media_until(quiet, lambda: any(at > asked_at for at, _ in carrier.of("media"))
                                  and len(carrier.of("mark")) >= 3)
        await carrier.send({"event": "stop", "streamSid": carrier.stream_sid,
                            "stop": {"accountSid": ACCOUNT, "callSid": call_sid}})
        await carrier.ws.wait_closed()
        return carrier, opening_media


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("law, unit", [("mulaw", 0xFF), ("alaw", 0xD5)])
def test_a_phone_call_is_heard_by_deepgram_and_spoken_by_azure_in_its_own_g711(
        agent_server, client, tenant_a, twilio_carrier, called_number, api_a, speech_server, settings, law, unit):
    from tests.agent_app.test_twilio_call import ASKED, incoming

    with FakeAzureTts(chunks=2, chunk_bytes=800) as azure, \
            FakeDeepgram(utterances=[ASKED], seconds_per_word=0.2) as deepgram:
        settings.GATEWAY_MAX_EUR = 0.01
        local = speech_server(text="vom lokalen Erkenner gehört")
        load(stt_lane("stt-whisper-gpu", local.url))
        settings.GATEWAY_LANE_SETTINGS = {
            lane_variable("tts-azure-de", "KEY"): azure.key,
            lane_variable("tts-azure-de", "ENDPOINT"): azure.base_url,
            lane_variable("stt-deepgram", "KEY"): deepgram.key,
            lane_variable("stt-deepgram", "ENDPOINT"): deepgram.base_url}
        assert api_a.post("/v2/assistants", {"name": "Empfang", "voice": VOICE, "transcriber": TRANSCRIBER},
                          format="json").status_code == 201
        call_sid = new_call_sid()
        asked = spoken(ASKED, WireFormat(law, 8000))
        carrier, opening_media = asyncio.run(_phone_call(agent_server.port, incoming(client, call_sid), call_sid,
                                                         law, asked))
        connection = deepgram.connections[0]
        assert connection.closed.wait(5)
        formats = {request.output_format for request in azure.requests}
    assert (connection.param("encoding"), connection.param("sample_rate")) == (law, "8000")
    assert asked in bytes(connection.audio)  # the carrier's bytes, in order, unconverted
    assert formats == {f"raw-8khz-8bit-mono-{law}"}
    opening = b"".join(base64.b64decode(m["media"]["payload"]) for _, m in carrier.of("media")[:opening_media])
    assert opening and set(opening) == {unit}  # Azure's bytes as they came, not re-encoded
    assert local.requests == []
    call = Call.objects.with_transcript().get(carrier_call_id=call_sid)
    assert ("user", ASKED) in [(entry.role, entry.text) for entry in call.transcript_entries.all()]
