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


def test_the_vocabulary_lists_words_by_stem_and_long_words_by_their_tails():
    rows = analysis.vocabulary(["Die Zahnreinigung und die Öffnungszeiten, die Zähne", "Zähne und Zähne"])
    assert {("zahn", "zähne", True, 2), ("zahnrein", "zahnreinigung", True, 1),
            ("reinig", "zahnreinigung", False, 1), ("zeit", "öffnungszeiten", False, 1)} <= rows
    assert {word for _, word, _, _ in rows} == {"zahnreinigung", "öffnungszeiten", "zähne"}  # no stop words
    assert analysis.vocabulary(["x" * 50]) == set()


def test_query_words_are_widened_by_synonyms_and_the_tenants_vocabulary():
    asked = []
    vocabulary = {"prefixes": {"termin": ["termin", "terminabsage"]}, "tails": {"reinig": ["zahnreinigung"]},
                  "parts": {"zahn": ["zähne"]}, "passages": 10,
                  "df": {"praxis": 9, "off": 1, "termin": 3, "terminabsag": 1, "reinig": 1, "zahnrein": 2, "zahn": 4,
                         "geoffn": 2}}

    def lookup(request):
        asked.append(request)
        return vocabulary

    query = analysis.query_terms("Ist die Praxis offen? Termin zur Reinigung, Zahnkontrolle",
                                 [["geöffnet", "offen"], ["Urlaub", "Ferien"]], lookup=lookup)
    assert query.words == ("praxis", "offen", "termin", "reinigung", "zahnkontrolle", "geöffnet", "zähne",
                           "zahnreinigung", "terminabsage")
    weights = dict(zip(query.words, query.weights, strict=True))
    # Rarer words weigh more; a word the vocabulary added weighs less than the query's own.
    assert weights["zahnkontrolle"] > weights["offen"] > weights["termin"] > weights["praxis"]
    assert weights["terminabsage"] < weights["offen"]
    assert query.passages == 10 and dict(zip(query.words, query.shares, strict=True))["praxis"] == 0.9
    assert "praxis" not in query.rare_words(0.5) and "offen" in query.rare_words(0.5)
    request = asked[0]
    assert request.prefixes == request.tails == {"praxis", "termin", "reinig", "zahnkontroll", "geoffn"}
    assert {"zahn", "kontroll", "off"} <= request.parts
    assert "urlaub" not in query.words and "die" not in query.words and "ist" not in query.words
    # A member of several words counts when all of them are asked; without a vocabulary all weigh 1.
    plain = analysis.query_terms("Termin buchen", [["Termin vereinbaren", "Termin buchen"]])
    assert "vereinbaren" in plain.words and set(plain.weights) == {1.0}
    assert "vereinbaren" not in analysis.query_terms("buchen", [["Termin vereinbaren", "buchen x"]]).words
