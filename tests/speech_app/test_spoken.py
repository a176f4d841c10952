"""The German normaliser (speech_app.spoken): a corpus of written German with the
spoken form each case must come out as, and the rules every output keeps."""
import json
import re
from pathlib import Path

import pytest

from speech_app.spoken import spoken_form

CASES = json.loads((Path(__file__).parent / "spoken_cases.json").read_text(encoding="utf-8"))
DIGIT_WORDS = {"null": "0", "eins": "1", "zwei": "2", "drei": "3", "vier": "4", "fünf": "5", "sechs": "6",
               "sieben": "7", "acht": "8", "neun": "9"}


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 150


@pytest.mark.parametrize("case", CASES, ids=[case["text"][:40] for case in CASES])
def test_spoken_form(case):
    assert spoken_form(case["text"]) == case["spoken"]


@pytest.mark.parametrize("case", CASES, ids=[case["text"][:40] for case in CASES])
def test_no_digit_is_left(case):
    assert not re.search(r"\d", spoken_form(case["text"]))


@pytest.mark.parametrize("written, digits", [
    ("Rufen Sie uns an unter 030 901820.", "030901820"),
    ("Mobil: 0171 2345678", "01712345678"),
    ("Zentrale +49 221 4876930", "492214876930"),
    ("Fax 089/12 34 56", "089123456"),
])
def test_phone_numbers_are_read_digit_by_digit_in_order(written, digits):
    words = re.findall(r"[a-zäöüß]+", spoken_form(written).lower())
    assert digits in "".join(DIGIT_WORDS.get(word, "") for word in words)


def test_variables_links_and_addresses_are_spoken_as_written():
    text = "{{name}}, schreiben Sie an info@praxis-1.de oder besuchen Sie www.praxis-1.de/seite2, Tel. 030 12345."
    spoken = spoken_form(text)
    assert spoken.startswith("{{name}}, ")
    assert "info@praxis-1.de" in spoken and "www.praxis-1.de/seite2" in spoken
    assert spoken.endswith("Telefon null drei null, eins zwei drei vier fünf.")


def test_text_without_numbers_or_abbreviations_is_unchanged():
    text = "Guten Tag, hier spricht der digitale Assistent der Praxis Müller. Wie kann ich helfen?"
    assert spoken_form(text) == text


def test_empty_text():
    assert spoken_form("") == ""


def test_a_german_voice_says_the_spoken_form(monkeypatch):
    from speech_app.tts import synthesizer

    engine = synthesizer()
    said = []
    utterance = engine._utterance

    def recorded(driver, sentence):
        said.append(sentence)
        return utterance(driver, sentence)

    monkeypatch.setattr(engine, "_utterance", recorded)
    speech = engine.synthesize("Termin am 03.12. um 14:30 Uhr.", voice="de")
    assert said == ["Termin am dritten Dezember um vierzehn Uhr dreißig."]
    assert speech.duration_sec > 1.5


def test_other_languages_are_not_rewritten():
    from speech_app.tts import spoken_text

    assert spoken_text("Call 030 901820 at 14:30.", "en") == "Call 030 901820 at 14:30."
    assert spoken_text("Nr. 5", "de+m3") == "Nummer fünf"
