"""A speech provider that fails inside a live call is replaced within the same turn
(issue 36, §3): Azure killed or hanging mid-sentence, Deepgram killed mid-utterance. The
caller's side measures the dead air from the audio it receives; the transcript gets a
German system note; the lane cools down; its use and failure are counted."""
import asyncio
import contextlib
import datetime
import time

import pytest
from django.utils import timezone
from websockets.exceptions import ConnectionClosed

from bench.harness import dead_air
from calls_app.models import Call
from gateway_app.models import LaneUsage
from registry_app.lanes.config import lane_variable
from registry_app.lanes.failover import LaneFailure
from registry_app.models import LaneCooldown
from registry_app.routing import invalidate_lane_state
from registry_app.services import lane_cooldown_start
from speech_app.services import streaming_recognizer_for, streaming_speech_step
from tests.agent_app.conftest import PCM, Caller, dial, grant, silence, spoken
from tests.agent_app.test_streaming_voice import SAID, TRANSCRIBER, VOICE, usage_of
from tests.azure_tts_fake import FakeAzureTts
from tests.deepgram_fake import FakeDeepgram
from tests.speech_app.speech_server import load, stt_lane

# The most dead air a caller may hear when a provider fails (issue 36).
MAX_DEAD_AIR_SEC = 1.5
LOCAL_TEXT = "vom lokalen Erkenner gehört"


class Listening(Caller):
    """A caller that reads every frame as it arrives (also while it speaks), so that the
    arrival times of the agent's audio are the caller's."""

    def __init__(self, ws):
        super().__init__(ws)
        self.reader = asyncio.create_task(self._read())

    async def _read(self):
        with contextlib.suppress(ConnectionClosed):  # the session's end
            while True:
                await Caller.next(self)

    async def until(self, kind, after=0):
        """The first JSON frame of `kind` from index `after` on (waits for it, within the receive timeout)."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for index, (_, frame) in enumerate(self.frames[after:], start=after):
                if isinstance(frame, dict) and frame["type"] == "error":
                    raise AssertionError(f"error frame: {frame}")
                if isinstance(frame, dict) and frame["type"] == kind:
                    return index
            await asyncio.sleep(0.01)  # polling the reader's frames with a deadline
        raise AssertionError(f"no {kind}")

    def audio_between(self, start, end):
        return [(at, frame) for at, frame in self.frames[start:end] if isinstance(frame, bytes)]


async def _talk(url, speech, *, after_opening=lambda: None):
    """A browser session: the opening, then `speech` and a second of silence; returns the
    caller, the index of the reply's agent.speaking and its agent.done, and when the
    caller's speech ended (monotonic)."""
    async with dial(url) as ws:
        caller = Listening(ws)
        opened = await caller.until("agent.done")
        after_opening()
        began = time.monotonic()
        await caller.stream(speech + silence(1.0))
        speech_end = began + len(speech) / PCM.bytes_per_second
        reply = await caller.until("agent.speaking", opened + 1)
        done = await caller.until("agent.done", reply)
        await ws.send('{"type": "end"}')
        await ws.wait_closed()
        caller.reader.cancel()
        return caller, reply, done, speech_end


def _configure(settings, speech_server, *, azure=None, deepgram=None):
    settings.GATEWAY_MAX_EUR = 0.01
    local = speech_server(text=LOCAL_TEXT)  # the plan's next stt lane (a zero-euro speech server)
    load(stt_lane("stt-whisper-gpu", local.url))
    lanes = {}
    for lane, fake in (("tts-azure-de", azure), ("stt-deepgram", deepgram)):
        if fake is not None:
            lanes |= {lane_variable(lane, "KEY"): fake.key, lane_variable(lane, "ENDPOINT"): fake.base_url}
    settings.GATEWAY_LANE_SETTINGS = lanes
    return local


def _notes(session):
    call = Call.objects.with_transcript().get(pk=session["callId"])
    return [entry.text for entry in call.transcript_entries.all() if entry.role == "system"]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("failure, outcome", [("kill", "connection_error"), ("stall", "timeout")])
def test_azure_failing_mid_sentence_is_replaced_within_the_turn(
        agent_server, api_a, instant_speech, speech_server, settings, failure, outcome):
    with FakeAzureTts(chunks=3, chunk_bytes=1600, failure=failure) as azure:
        _configure(settings, speech_server, azure=azure)
        assistant = api_a.post("/v2/assistants", {"name": "Empfang", "voice": VOICE}, format="json").json()
        session = grant(api_a, agent_server.port, assistant=assistant["id"])

        def fail_from_now():
            azure.fail_from = len(azure.requests)  # the opening was Azure's; the reply's first sentence fails

        caller, reply, done, _ = asyncio.run(_talk(session["url"], spoken(SAID), after_opening=fail_from_now))
        failed_at = azure.fail_from
        requests = len(azure.requests)
    audio = caller.audio_between(reply, done)
    first = b"".join(frame for _, frame in audio)[:1600]
    assert first == b"\x01\x00" * 800  # Azure's first piece was heard …
    assert len(b"".join(frame for _, frame in audio)) > 16000  # … then the local voice spoke the sentence whole
    assert requests == failed_at + 1  # one failed request; then the lane cooled down and was not asked
    assert _notes(session) == [f"Sprachausgabe tts-azure-de ausgefallen ({outcome}): "
                               "die lokale Stimme spricht den Satz noch einmal."]
    assert LaneCooldown.objects.filter(lane_id="tts-azure-de").exists()
    assert LaneUsage.objects.get(lane_id="tts-azure-de").failures == 1
    silent = dead_air([(at, len(frame)) for at, frame in audio], PCM.bytes_per_second)
    assert silent <= MAX_DEAD_AIR_SEC, f"{silent:.2f} s of dead air"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("failure, outcome", [("kill", "connection_error"), ("stall", "timeout")])
def test_deepgram_failing_mid_utterance_the_turn_is_heard_by_the_next_lane_without_dead_air(
        agent_server, api_a, instant_speech, speech_server, settings, failure, outcome):
    failing = {"kill_after": 1.0} if failure == "kill" else {"stall": True}
    with FakeDeepgram(utterances=[SAID], seconds_per_word=0.25, **failing) as deepgram:
        local = _configure(settings, speech_server, deepgram=deepgram)
        assistant = api_a.post("/v2/assistants", {"name": "Empfang", "transcriber": TRANSCRIBER},
                               format="json").json()
        session = grant(api_a, agent_server.port, assistant=assistant["id"])
        caller, reply, done, speech_end = asyncio.run(_talk(session["url"], spoken(SAID)))
        assert deepgram.killed.is_set() == (failure == "kill")
    final = next(frame for _, frame in caller.frames if isinstance(frame, dict) and frame["type"] == "transcript.final")
    assert final["text"] == LOCAL_TEXT and len(local.requests) == 1  # the whole turn's audio, heard by the next lane
    assert local.requests[0][2]["prompt"] == ["Montag, Termin"]  # the vocabulary went along
    first_audio = caller.audio_between(reply, done)[0][0]
    assert first_audio - speech_end <= MAX_DEAD_AIR_SEC, f"{first_audio - speech_end:.2f} s of dead air"
    assert _notes(session) == [f"Spracherkennung stt-deepgram ausgefallen ({outcome}): "
                               "die lokale Spracherkennung hört."]
    usage = usage_of("stt-deepgram")
    assert usage.failures == 1 and usage.audio_seconds >= 1.0  # what was sent before it died is paid for
    assert LaneCooldown.objects.filter(lane_id="stt-deepgram").exists()


# --- The call's budget of its named speech lanes ---------------------------------------

@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_calls_speech_budget_once_spent_leaves_the_rest_to_the_local_engines(
        agent_server, api_a, instant_speech, speech_server, settings):
    # stt-deepgram costs 0.004 EUR an audio minute: this budget is 1.5 s of the caller's
    # audio; Azure's sentences (14.50 EUR per 1M characters) do not fit what is left.
    settings.AGENT_SPEECH_MAX_EUR = 0.0001
    with FakeAzureTts() as azure, FakeDeepgram(utterances=[SAID], seconds_per_word=0.25) as deepgram:
        local = _configure(settings, speech_server, azure=azure, deepgram=deepgram)
        assistant = api_a.post("/v2/assistants", {"name": "Empfang", "voice": VOICE, "transcriber": TRANSCRIBER},
                               format="json").json()
        session = grant(api_a, agent_server.port, assistant=assistant["id"])
        caller, reply, done, _ = asyncio.run(_talk(session["url"], spoken(SAID)))
        connection = deepgram.connections[0]
        assert connection.closed.wait(5)
    assert azure.requests == []  # no sentence fitted: the local voice spoke them all
    assert len(caller.audio_between(reply, done)) > 0
    sent = len(connection.audio) / PCM.bytes_per_second
    assert 1.0 <= sent <= 1.5  # Deepgram heard what the budget paid for, not a frame more
    final = next(frame for _, frame in caller.frames if isinstance(frame, dict) and frame["type"] == "transcript.final")
    assert final["text"] == LOCAL_TEXT and len(local.requests) == 1  # the turn was heard by the next lane
    notes = _notes(session)
    assert len(notes) == 2 and all("das Budget des Gesprächs ist aufgebraucht" in note for note in notes), notes
    assert notes[0].startswith("Sprachausgabe tts-azure-de") and notes[1].startswith("Spracherkennung stt-deepgram")
    usage = usage_of("stt-deepgram")
    assert usage.audio_seconds == pytest.approx(sent) and usage.failures == 0  # paid for; no failure of the lane
    assert not LaneCooldown.objects.filter(lane_id__in=["stt-deepgram", "tts-azure-de"]).exists()


@pytest.mark.django_db
def test_a_named_lane_is_asked_again_once_its_cooldown_ended(settings):
    """The lanes' state keeps a cooldown that has ended until an answer clears it: a named
    lane must be asked again then (it was not: a lane that failed once spoke no more)."""
    load()
    settings.GATEWAY_LANE_SETTINGS = {lane_variable("stt-deepgram", "KEY"): "dg", lane_variable("tts-azure-de", "KEY"): "az"}
    for lane in ("stt-deepgram", "tts-azure-de"):
        lane_cooldown_start(lane_id=lane, seconds=30, reason="timeout: no answer")
    for ask in (lambda: streaming_speech_step("tts-azure-de", characters=10), lambda: streaming_recognizer_for("stt-deepgram")):
        with pytest.raises(LaneFailure) as refused:
            ask()
        assert refused.value.outcome == "cooldown"
    LaneCooldown.objects.update(until=timezone.now() - datetime.timedelta(seconds=1))
    invalidate_lane_state()
    assert streaming_speech_step("tts-azure-de", characters=10).lane.id == "tts-azure-de"
    assert streaming_recognizer_for("stt-deepgram").lane_id == "stt-deepgram"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_wrong_keys_are_the_lanes_clear_error_and_the_local_floor_speaks_and_hears(
        agent_server, api_a, instant_speech, speech_server, settings):
    with FakeAzureTts(key="az-right") as azure, FakeDeepgram(utterances=[SAID], key="dg-right") as deepgram:
        local = _configure(settings, speech_server, azure=azure, deepgram=deepgram)
        settings.GATEWAY_LANE_SETTINGS |= {lane_variable("tts-azure-de", "KEY"): "az-wrong",
                                           lane_variable("stt-deepgram", "KEY"): "dg-wrong"}
        assistant = api_a.post("/v2/assistants", {"name": "Empfang", "voice": VOICE, "transcriber": TRANSCRIBER},
                               format="json").json()
        session = grant(api_a, agent_server.port, assistant=assistant["id"])
        caller, reply, done, _ = asyncio.run(_talk(session["url"], spoken(SAID)))
        asked = len(azure.requests)
    assert asked == 1 and deepgram.connections == []  # each refused once (Deepgram at the handshake), then cooling
    assert len(caller.audio_between(reply, done)) > 0 and len(local.requests) == 1  # the floor spoke and heard
    notes = _notes(session)
    assert "Sprachausgabe tts-azure-de ausgefallen (rejected): die lokale Stimme spricht." in notes
    assert "Spracherkennung stt-deepgram ausgefallen (rejected): die lokale Spracherkennung hört." in notes
    reasons = dict(LaneCooldown.objects.values_list("lane_id", "reason"))
    assert reasons["tts-azure-de"] == "rejected: HTTP 401: the key was refused"
    assert reasons["stt-deepgram"] == "rejected: Deepgram refused the connection with HTTP 401: the key was refused"
    for capability, lane in (("tts", "tts-azure-de"), ("stt", "stt-deepgram")):
        routed = api_a.get(f"/v2/registry/route?capability={capability}&language=de").json()
        shown = [item for item in routed["excluded"] if item.get("id", item.get("lane")) == lane]
        assert shown and "401: the key was refused" in str(shown), routed["excluded"]
    assert usage_of("stt-deepgram").failures == 1 and LaneUsage.objects.get(lane_id="tts-azure-de").failures == 1
