"""The tests' speech (tests/speech_app/synthesis.py) is the same in every run: eSpeak NG in
this process sounds a little different after each synthesis, the helper's does not."""
from pathlib import Path

import pytest

from speech_app.tts import EspeakSynthesizer
from tests.speech_app import synthesis

pytestmark = pytest.mark.slow  # a helper process with Django and eSpeak NG

SENTENCE = "Ich komme am Freitag um zehn Uhr zu Ihnen in die Praxis."


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(synthesis.DIRECTORY_VARIABLE, str(tmp_path))
    return tmp_path


def test_a_sentence_sounds_the_same_whatever_was_synthesised_before(cache: Path) -> None:
    first = synthesis.synthesised(SENTENCE, voice="de+m3")
    for path in cache.iterdir():  # spoken anew, after other speech of the helper and of this process
        path.unlink()
    synthesis.synthesised("Guten Tag, hier ist die Praxis.", voice="de+m3")
    engine = EspeakSynthesizer()
    here = [engine.synthesize(SENTENCE, voice="de+m3").pcm for _ in range(2)]
    again = synthesis.synthesised(SENTENCE, voice="de+m3")
    assert (again.pcm, again.sample_rate) == (first.pcm, first.sample_rate)
    assert here[0] != here[1]  # why the cache exists: the engine of a process drifts


def test_a_sentence_is_synthesised_once_per_run(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spoken = synthesis.synthesised(SENTENCE, voice="de+m3")
    monkeypatch.setattr(synthesis._synthesiser, "speak", lambda *args: pytest.fail("synthesised again"))
    assert synthesis.synthesised(SENTENCE, voice="de+m3") == spoken
    assert len(list(cache.iterdir())) == 1
    with pytest.raises(pytest.fail.Exception):  # another voice is another sentence
        synthesis.synthesised(SENTENCE, voice="de")
