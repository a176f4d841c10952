"""The one German sentence splitter (console.sentences) on what practices write in their
FAQs: titles, street abbreviations, "z. B.", numbers, dates and ordinals never cut a
sentence; the offline policy and the knowledge's passages use the same cuts."""
import pytest

from console.sentences import split_sentences
from knowledge_app.splitting import _pieces

# (text, its sentences): FAQ answers as practices write them.
CORPUS = [
    ("Sie erreichen die Praxis Dr. Weber unter 030 901820. Wir rufen gern zurück.",
     ["Sie erreichen die Praxis Dr. Weber unter 030 901820.", "Wir rufen gern zurück."]),
    ("Die Praxis liegt in der Hauptstr. 12 im 1. Stock. Ein Aufzug ist vorhanden.",
     ["Die Praxis liegt in der Hauptstr. 12 im 1. Stock.", "Ein Aufzug ist vorhanden."]),
    ("Parken können Sie in der Goethe Str. Ecke Schillerplatz. Dort gibt es 20 Plätze.",
     ["Parken können Sie in der Goethe Str. Ecke Schillerplatz.", "Dort gibt es 20 Plätze."]),
    ("Bringen Sie bitte Unterlagen mit, z. B. Ihren Impfpass. Die Karte nicht vergessen!",
     ["Bringen Sie bitte Unterlagen mit, z. B. Ihren Impfpass.", "Die Karte nicht vergessen!"]),
    ("Vom 24. Dezember bis zum 2. Januar ist die Praxis geschlossen. Vertretung: Dr. Klein.",
     ["Vom 24. Dezember bis zum 2. Januar ist die Praxis geschlossen.", "Vertretung: Dr. Klein."]),
    ("Am 3. Dezember bleibt die Praxis zu. Ab dem 4. sind wir wieder da.",
     ["Am 3. Dezember bleibt die Praxis zu.", "Ab dem 4. sind wir wieder da."]),
    ("Rezepte bestellen Sie unter Tel. 030 901820 oder per E-Mail. Abholung nach ca. 2 Tagen.",
     ["Rezepte bestellen Sie unter Tel. 030 901820 oder per E-Mail.", "Abholung nach ca. 2 Tagen."]),
    ("Die Sprechstunde von Prof. Dr. Sommer ist Mo. bis Fr. Die Termine vergibt Hr. Meier.",
     ["Die Sprechstunde von Prof. Dr. Sommer ist Mo. bis Fr.", "Die Termine vergibt Hr. Meier."]),
    ("Sie finden uns in der Hauptstr. 12. Wir freuen uns auf Sie.",
     ["Sie finden uns in der Hauptstr. 12.", "Wir freuen uns auf Sie."]),
    ("Zimmer Nr. 4 ist das Labor. Blutabnahme ggf. nüchtern. Bitte melden Sie sich an der Anmeldung.",
     ["Zimmer Nr. 4 ist das Labor.", "Blutabnahme ggf. nüchtern.", "Bitte melden Sie sich an der Anmeldung."]),
    ("Ansprechpartnerin ist A. Schmidt. Haben Sie Fragen? Rufen Sie an.",
     ["Ansprechpartnerin ist A. Schmidt.", "Haben Sie Fragen?", "Rufen Sie an."]),
    ("Die Behandlung dauert ca. 30 Min. und kostet inkl. MwSt. 80 Euro. Die Kasse zahlt bzw. erstattet sie.",
     ["Die Behandlung dauert ca. 30 Min. und kostet inkl. MwSt. 80 Euro.", "Die Kasse zahlt bzw. erstattet sie."]),
]


@pytest.mark.parametrize(("text", "sentences"), CORPUS, ids=[text[:30] for text, _ in CORPUS])
def test_practice_faq_sentences_are_cut_where_they_end(text, sentences):
    assert split_sentences(text) == sentences


def test_a_long_knowledge_paragraph_is_cut_between_whole_sentences():
    paragraph = " ".join(text for text, _ in CORPUS)
    pieces = list(_pieces(paragraph, max_chars=120))
    every_sentence = [sentence for _, sentences in CORPUS for sentence in sentences]
    assert pieces == every_sentence  # each shorter than 120: never cut after "Dr." or "3."


@pytest.mark.django_db
def test_the_offline_policy_answers_with_whole_sentences(tenant_a):
    from agent_app.policy.passages import sentences as _sentences

    passage = "## Kontakt\nSie erreichen die Praxis Dr. Weber in der Hauptstr. 12. Wir rufen gern zurück."
    assert _sentences(passage) == ["Sie erreichen die Praxis Dr. Weber in der Hauptstr. 12.",
                                   "Wir rufen gern zurück."]


def test_a_one_page_faq_pdf_becomes_a_passage_per_question():
    from knowledge_app.splitting import passages, pdf_sections

    page = ("Praxis Dr. Weber\nHäufige Fragen\nWann haben Sie geöffnet?\nMo. bis Fr. von 8 bis 18 Uhr, am 24.\n"
            "Dezember bis 12 Uhr.\nWo kann ich parken?\nIn der Hauptstr. 12 im Hof, z. B. auf Platz Nr. 3.\n"
            "Anfahrt\nBus 42 bis zur Haltestelle Rathaus.")
    found = passages(pdf_sections([page]), 1000)
    assert [(passage.heading, passage.text) for passage in found] == [
        ("Seite 1", "Praxis Dr. Weber Häufige Fragen"),
        ("Seite 1 › Wann haben Sie geöffnet?", "Mo. bis Fr. von 8 bis 18 Uhr, am 24. Dezember bis 12 Uhr."),
        ("Seite 1 › Wo kann ich parken?", "In der Hauptstr. 12 im Hof, z. B. auf Platz Nr. 3."),
        ("Seite 1 › Anfahrt", "Bus 42 bis zur Haltestelle Rathaus."),
    ]
