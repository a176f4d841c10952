"""Documents into passages under their headings, and German words as the index sees
them (knowledge_app/splitting.py and analysis.py: no database)."""
from knowledge_app import analysis, splitting


def test_markdown_headings_make_a_path_and_code_fences_are_text():
    text = """Vorwort ohne Überschrift.

# Praxis
## Leistungen
### Zahnreinigung **(PZR)**
Dauert eine Stunde.
## Kontakt ##
Telefon: [030 123](tel:030123)
```
# kein Titel
```
Setext-Titel
============
Text darunter.
Unterpunkt
----------
- erster Punkt
- zweiter Punkt
"""
    sections = splitting.markdown_sections(text)
    assert sections == [
        ("", ["Vorwort ohne Überschrift."]),
        ("Praxis › Leistungen › Zahnreinigung (PZR)", ["Dauert eine Stunde."]),
        ("Praxis › Kontakt", ["Telefon: 030 123 (tel:030123)", "# kein Titel"]),
        ("Setext-Titel", ["Text darunter."]),
        ("Setext-Titel › Unterpunkt", ["- erster Punkt\n- zweiter Punkt"]),
    ]


def test_passages_are_bounded_and_never_span_sections():
    sections = [("A", ["Kurz.", "Noch ein Satz. " * 30]), ("B", ["x" * 250])]
    pieces = splitting.passages(sections, 100)
    assert all(len(piece.text) <= 100 for piece in pieces)
    assert {piece.heading for piece in pieces} == {"A", "B"}
    assert pieces[0].text.startswith("Kurz.\n\nNoch ein Satz.")
    assert "".join(piece.text for piece in pieces if piece.heading == "B") == "x" * 250


def test_pdf_pages_are_sections_and_broken_words_are_joined():
    sections = splitting.pdf_sections(["Die Zahn-\nreinigung kostet\n\n95 Euro.", "  \n", "Seite drei"])
    assert sections == [("Seite 1", ["Die Zahnreinigung kostet 95 Euro."]), ("Seite 3", ["Seite drei"])]


def test_stems_are_snowballs_without_stop_words():
    assert analysis.stems("Die Termine und Terminen der Zähne") == "termin termin zahn"
    assert analysis.stems("ﬁnden Öffnungszeiten") == "find offnungszeit"  # NFKC: the ligature ﬁ


def test_compound_tails_reach_the_head_word():
    assert "reinigung" in analysis.compound_tails("Zahnreinigung").split()
    assert "zeiten" in analysis.compound_tails("Öffnungszeiten").split()
    assert analysis.compound_tails("Zahn Haus") == ""


def test_query_terms_add_synonyms_heads_and_tails():
    terms = {term.word: term.prefix for term in analysis.query_terms(
        "Wann ist die Praxis offen für eine Zahnreinigung?", [["geöffnet", "offen"], ["Urlaub", "Ferien"]])}
    # `offen` stems to `off`: too short to be asked as a prefix.
    assert terms["praxis"] is True and terms["offen"] is False and terms["geöffnet"] is True
    assert "urlaub" not in terms and "die" not in terms and "ist" not in terms
    assert terms["zahn"] is True and terms["reinigung"] is False
    # A member of several words counts when all of them are asked.
    words = {t.word for t in analysis.query_terms("Termin buchen", [["Termin vereinbaren", "Termin buchen"]])}
    assert "vereinbaren" in words
    assert "vereinbaren" not in {t.word for t in analysis.query_terms("buchen", [["Termin vereinbaren", "buchen x"]])}
