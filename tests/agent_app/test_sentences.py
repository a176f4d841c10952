"""The model's streamed answer cut into sentences as they complete (agent_app.sentences):
German abbreviations, initials, days and ordinals end no sentence, whatever the pieces
the model streams."""
import pytest

from console.sentences import Sentences


def cut(text, size):
    sentences, done = Sentences(), []
    for start in range(0, len(text), size):
        done += sentences.feed(text[start:start + size])
    rest = sentences.flush()
    return done + ([rest] if rest else [])


@pytest.mark.parametrize("size", [1, 2, 5, 1000])
@pytest.mark.parametrize("text, expected", [
    ("Gern. Wann passt es Ihnen?", ["Gern.", "Wann passt es Ihnen?"]),
    ("Wir haben z. B. am Samstag geöffnet. Kommen Sie vorbei!",
     ["Wir haben z. B. am Samstag geöffnet.", "Kommen Sie vorbei!"]),
    ("Wir haben z.B. samstags geöffnet. Danke.", ["Wir haben z.B. samstags geöffnet.", "Danke."]),
    ("Dr. Müller ist heute da. Frau Dr. Schulz morgen.", ["Dr. Müller ist heute da.", "Frau Dr. Schulz morgen."]),
    ("Ihr Termin ist am 3. Mai um 14 Uhr. Passt das?", ["Ihr Termin ist am 3. Mai um 14 Uhr.", "Passt das?"]),
    ("Das dauert ca. 5 Minuten bzw. etwas länger. Gut.", ["Das dauert ca. 5 Minuten bzw. etwas länger.", "Gut."]),
    ("Bitte nennen Sie die Nr. Ihrer Bestellung. Danke.", ["Bitte nennen Sie die Nr. Ihrer Bestellung.", "Danke."]),
    ("Herr A. Schmidt ruft zurück. Bis dann.", ["Herr A. Schmidt ruft zurück.", "Bis dann."]),
    ("Wir sind in der Hauptstr. 12 in Köln. Die Nummer ist 0221 487693. Tschüss.",
     ["Wir sind in der Hauptstr. 12 in Köln.", "Die Nummer ist 0221 487693.", "Tschüss."]),
    ("„Gern.“ Und sonst?", ["„Gern.“", "Und sonst?"]),
    ("Erstens\nZweitens", ["Erstens", "Zweitens"]),
    ("Kein Satzende am Schluss", ["Kein Satzende am Schluss"]),
])
def test_sentences_complete_as_the_pieces_come(text, expected, size):
    assert cut(text, size) == expected


def test_a_sentence_is_handed_on_once_the_next_word_begins():
    sentences = Sentences()
    assert sentences.feed("Guten Tag. ") == []  # an abbreviation or an ordinal could still follow
    assert sentences.feed("W") == ["Guten Tag."]
    assert sentences.feed("ie geht's? ") == ["Wie geht's?"]  # ! and ? decide at once
    assert sentences.flush() == ""


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_a_replys_first_piece_may_be_a_clause(size):
    sentences, done = Sentences(clause_first=True), []
    text = "Gern, ich notiere das für Sie, am 3. Mai. Danke, bis bald."
    for start in range(0, len(text), size):
        done += sentences.feed(text[start:start + size])
    assert done + [sentences.flush()] == ["Gern,", "ich notiere das für Sie, am 3. Mai.", "Danke, bis bald."]
    assert cut("Die Summe ist 12,50 Euro; danke.", 2) == ["Die Summe ist 12,50 Euro; danke."]
    clause = Sentences(clause_first=True)
    assert clause.feed("Das kostet 12,50 Euro. ") == []  # no white space after the comma of a number
    assert clause.feed("Gut") == ["Das kostet 12,50 Euro."]
