"""The round trip benchmark's arithmetic (bench/bench_digits.py): what counts as the
digits a text says, and how heard transcripts are scored. No speech engines here."""
import pytest

from bench import bench_digits
from bench.bench_digits import SENTENCES, digits_of, score
from speech_app.spoken import spoken_form


def test_there_are_enough_number_sentences_of_every_kind():
    assert len(SENTENCES) >= 30
    assert {kind for kind, _ in SENTENCES} >= {"phone", "time", "date", "price", "reference"}


@pytest.mark.parametrize(("kind", "text"), SENTENCES)
def test_a_sentence_says_the_same_digits_written_and_in_its_spoken_form(kind, text):
    """A perfect round trip of the normaliser's words scores every digit right."""
    assert digits_of(text) and digits_of(spoken_form(text)) == digits_of(text)


@pytest.mark.parametrize(("written", "heard"), [
    ("Rufen Sie mich unter 0221 487693 an.", "Rufen Sie mich unter 0, 2, 2, 1, 4, 8, 7, 6, 9, 3 an."),
    ("Rufen Sie mich unter 0221 487693 an.", "Rufen Sie mich unter 0,2,2,1,4,8,7,6,9,3 an."),
    ("Der Termin ist um 14:30 Uhr.", "Der Termin ist um 14 Uhr 30."),
    ("Der Termin ist um 14:30 Uhr.", "Der Termin ist um 14.30 Uhr."),
    ("Wir öffnen morgens um 8:00 Uhr.", "Wir öffnen morgens um 8 Uhr."),
    ("Ihr Termin ist am 03.12.2026.", "Ihr Termin ist am 3. Dezember 2026."),
    ("Die Untersuchung kostet 12,50 €.", "Die Untersuchung kostet 12,50 Euro."),
    ("Die Anzahlung beträgt 1.200 €.", "Die Anzahlung beträgt 1200 Euro."),
    ("Ein Aufmaß kostet 60 Euro.", "Ein Aufmaß kostet sechzig Euro."),  # "Ein" is an article, no digit
])
def test_whispers_ways_of_writing_numbers_say_the_same_digits(written, heard):
    assert digits_of(heard) == digits_of(written)


def test_scores_count_digits_entities_and_whole_sentences():
    phone = next(i for i, (kind, _) in enumerate(SENTENCES) if kind == "phone")
    time = next(i for i, (kind, _) in enumerate(SENTENCES) if kind == "time")
    rows = [
        {"voice": "de", "index": phone, "mode": "after", "heard": spoken_form(SENTENCES[phone][1])},
        {"voice": "de", "index": time, "mode": "after", "heard": "Der Termin ist um 14 Uhr 50."},  # one digit wrong
        {"voice": "de", "index": phone, "mode": "before", "heard": "9, " * 200},  # a repeating transcript
        {"voice": "de", "index": time, "mode": "before", "heard": SENTENCES[time][1]},
    ]
    table = {(row["mode"], row["kind"]): row for row in score(rows)}
    after, before = table[("after", "all")], table[("before", "all")]
    phone_digits, time_digits = len(digits_of(SENTENCES[phone][1])), len(digits_of(SENTENCES[time][1]))
    assert after["digit accuracy"] == f"{1 - 1 / (phone_digits + time_digits):.2f}"
    assert after["sentences, every digit right"] == "1/2" and after["entity accuracy"] == "0.50"
    # The repeating transcript costs its own sentence's digits, not more.
    assert before["digit accuracy"] == f"{1 - phone_digits / (phone_digits + time_digits):.2f}"
    assert before["sentences, every entity right"] == "1/2"
    assert table[("after", "phone")]["digit accuracy"] == "1.00"


def test_the_voices_are_the_products_and_the_tests_caller():
    assert bench_digits.VOICES == ("de", "de+m3")
    assert bench_digits.MODES[0] == "before" and bench_digits.MODES[1] == "after"


def test_digits_apart_says_each_digit_of_a_run_on_its_own_and_nothing_else():
    from bench.bench_digits import digits_apart

    assert digits_apart(spoken_form("Rufen Sie mich unter 0221 487693 an.")) == (
        "Rufen Sie mich unter null, zwei, zwei, eins, vier, acht, sieben, sechs, neun, drei an.")
    assert digits_apart("Der Termin ist um vierzehn Uhr dreißig.") == "Der Termin ist um vierzehn Uhr dreißig."
    assert all(digits_of(digits_apart(spoken_form(text))) == digits_of(text) for _, text in SENTENCES)


def test_an_ordinal_counts_only_as_a_date():
    assert digits_of("am dritten Dezember") == "312"
    assert digits_of("Wir achten darauf, 0, 1, 7, 6.") == "0176"  # "achten" the verb, misheard for "erreichen"
