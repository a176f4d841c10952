"""Hearing (agent_app/hearing.py) as behaviour: recognition starts during the pause and
its result is kept when no more speech came; the end-of-turn model ends a finished
turn sooner than the fixed pause and waits longer for a caller who stops mid-sentence;
partial transcripts come while the caller is still speaking. Audio is fed 30 ms at a
time, as fast as the test runs: what is asserted is what happened after how much of
the caller's audio, not how long anything took."""
import asyncio

import numpy
import pytest

from agent_app import hearing as hearing_module
from agent_app.audio import Endpointer
from agent_app.hearing import LONG_HANGOVER, Hearing
from speech_app.smart_turn import SmartTurn
from tests.agent_app.conftest import silence, spoken

FRAME_BYTES = Endpointer.FRAME * 2
COMPLETE_SENTENCE = "Ich hätte gerne einen Termin am Montag."


@pytest.fixture(scope="module")
def sentence():
    return spoken(COMPLETE_SENTENCE)


class Ears:
    """A Hearing fed frame by frame, with recognition replaced by a recorder: each
    recognition answers `heard-<n>` and notes how many frames had been fed."""

    def __init__(self, monkeypatch, model, drafts=None):
        self.frames_fed = 0
        self.recognitions = []  # (frames fed when it started, bytes of audio)
        self.turns = []  # (frames fed when the turn ended, Turn)
        self.partials = []  # (frames fed, text, still speaking)
        self.draft_answers = drafts

        async def hear(pcm, *, language, phrases=None):
            self.recognitions.append((self.frames_fed, len(pcm)))
            return f"heard-{len(self.recognitions)}"

        async def draft(pcm, *, language):
            return None if self.draft_answers is None else self.draft_answers

        monkeypatch.setattr(hearing_module, "_hear", hear)
        monkeypatch.setattr(hearing_module, "_draft", draft)
        monkeypatch.setattr(hearing_module, "smart_turn", lambda: model)

    async def feed(self, audio, *, settle=False):
        if not hasattr(self, "hearing"):
            self.hearing = Hearing(language="de", loop=asyncio.get_running_loop(),
                                   on_turn=lambda turn: self.turns.append((self.frames_fed, turn)),
                                   on_partial=self._partial)
        for offset in range(0, len(audio) - FRAME_BYTES + 1, FRAME_BYTES):
            self.frames_fed += 1
            self.hearing.feed(audio[offset:offset + FRAME_BYTES])
            for _ in range(3):
                await asyncio.sleep(0)  # the tasks it started get their turn
            if settle:
                await self.hearing.settled()  # the end-of-turn model has answered

    async def _partial(self, text, start):
        self.partials.append((self.frames_fed, text, self.hearing.endpointer.speaking))


@pytest.fixture
def no_model(tmp_path):
    return SmartTurn(tmp_path / "not-installed.onnx")


@pytest.fixture(scope="module")
def model():
    from django.conf import settings

    turn_model = SmartTurn(settings.SMART_TURN_MODEL)
    assert turn_model.available, turn_model.unavailable_reason()
    return turn_model


def test_recognition_starts_in_the_pause_and_its_result_is_the_turns(monkeypatch, no_model, sentence):
    ears = Ears(monkeypatch, no_model)

    async def scenario():
        await ears.feed(sentence)
        spoken_frames = ears.frames_fed
        await ears.feed(silence(1.0))
        return spoken_frames, await ears.turns[0][1].transcript

    spoken_frames, text = asyncio.run(scenario())
    assert len(ears.recognitions) == 1 and len(ears.turns) == 1
    started_at, _ = ears.recognitions[0]
    ended_at, turn = ears.turns[0]
    assert started_at < ended_at  # recognition was under way before the end of the turn was decided
    assert turn.speculative and text == "heard-1"
    # Without the model, the fixed pause ends the turn; the recognition began a while before.
    assert ended_at - started_at == Endpointer.HANGOVER - Endpointer.PAUSES[0]
    assert ended_at > spoken_frames


def test_speech_after_the_pause_is_heard_again_with_it(monkeypatch, no_model, sentence):
    ears = Ears(monkeypatch, no_model)

    async def scenario():
        await ears.feed(sentence + silence(0.15) + sentence + silence(1.0))
        return await ears.turns[0][1].transcript

    text = asyncio.run(scenario())
    assert len(ears.turns) == 1  # a pause, not the end of the turn
    assert len(ears.recognitions) == 2
    (_, first_bytes), (_, second_bytes) = ears.recognitions
    assert second_bytes > first_bytes + len(sentence) // 2  # the second saw both halves
    assert text == "heard-2"  # the first (the audio up to the pause) was dropped


def test_a_finished_sentence_ends_the_turn_before_the_fixed_pause(monkeypatch, model, no_model, sentence):
    frames_until_turn = {}
    for name, turn_model in (("model", model), ("fixed", no_model)):
        ears = Ears(monkeypatch, turn_model)

        async def scenario(ears=ears):
            await ears.feed(sentence)
            spoken_frames = ears.frames_fed
            await ears.feed(silence(1.5), settle=True)
            return spoken_frames

        spoken_frames = asyncio.run(scenario())
        assert len(ears.turns) == 1
        frames_until_turn[name] = ears.turns[0][0] - spoken_frames
    assert frames_until_turn["fixed"] > frames_until_turn["model"]
    assert frames_until_turn["model"] <= Endpointer.PAUSES[-1]


def test_a_caller_who_stops_mid_sentence_is_waited_for(monkeypatch, model, no_model):
    """A filler and a pause of 0.7 s: the fixed pause (0.5 s) cuts the caller off, the
    model waits for the rest of the sentence."""
    audio = (spoken("Ich möchte gerne einen Termin für, äh") + silence(0.7) + spoken("nächste Woche.")
             + silence(2.0))
    turns = {}
    for name, turn_model in (("model", model), ("fixed", no_model)):
        ears = Ears(monkeypatch, turn_model)
        asyncio.run(ears.feed(audio, settle=True))
        turns[name] = len(ears.turns)
    assert turns == {"model": 1, "fixed": 2}


def test_with_the_model_no_pause_is_longer_than_the_long_hangover(monkeypatch, model):
    ears = Ears(monkeypatch, model)
    asyncio.run(ears.feed(spoken("Können Sie mich bitte, ähm,") + silence(2.0), settle=True))
    assert len(ears.turns) == 1
    assert ears.hearing.endpointer.hangover == LONG_HANGOVER


def test_partial_transcripts_come_while_the_caller_speaks(monkeypatch, no_model):
    ears = Ears(monkeypatch, no_model, drafts="Bitte rufen Sie")
    long_sentence = spoken("Bitte rufen Sie mich zurück, meine Nummer ist null eins fünf zwei, drei drei vier vier fünf.")
    asyncio.run(ears.feed(long_sentence + silence(1.0)))
    assert len(ears.partials) >= 2
    assert all(speaking for _, _, speaking in ears.partials)
    assert all(frames < ears.turns[0][0] for frames, _, _ in ears.partials)


def test_no_partial_when_the_engines_have_no_time_for_a_draft(monkeypatch, no_model, sentence):
    ears = Ears(monkeypatch, no_model, drafts=None)
    asyncio.run(ears.feed(sentence + silence(1.0)))
    assert ears.partials == [] and len(ears.turns) == 1


class ProviderEars:
    """A streaming recogniser's stand-in (agent_app.listening.Ears' surface): its events are
    handed to the Hearing by the test."""

    lane_id, failed = "stt-deepgram", False

    def start(self):
        pass

    def send(self, frame):
        pass

    def finalize(self):
        pass

    def close(self):
        pass


def test_the_providers_end_of_speech_a_moment_before_our_pause_ends_the_turn_at_that_pause(
        monkeypatch, no_model, sentence):
    """Deepgram's endpointing may hear the silence a frame or two before the voice activity
    detector: its `speech_final` then ends the turn at our first pause, not after the
    fixed one (it was dropped, and the turn waited out the hangover)."""
    from speech_app.streaming import Heard

    ears = Ears(monkeypatch, no_model)
    samples = numpy.frombuffer(sentence, dtype="<i2")
    voiced = sentence[:2 * (int(numpy.flatnonzero(numpy.abs(samples) > 500)[-1]) + 1)]  # without its trailing quiet

    async def scenario():
        await ears.feed(voiced)
        ears.hearing.listen_with(ProviderEars())
        assert ears.hearing.endpointer.speaking and not ears.hearing.endpointer.paused
        ears.hearing.heard(Heard(text=COMPLETE_SENTENCE, final=True, speech_final=True))
        spoken_frames = ears.frames_fed
        await ears.feed(silence(1.0))
        return spoken_frames, await ears.turns[0][1].transcript

    spoken_frames, text = asyncio.run(scenario())
    assert len(ears.turns) == 1 and text == COMPLETE_SENTENCE  # the provider's final, no local recognition
    assert ears.turns[0][0] - spoken_frames <= Endpointer.PAUSES[0] + 2 < Endpointer.HANGOVER
