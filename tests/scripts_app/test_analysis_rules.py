"""The linter on its own (no Django, no database): each rule with positives and
negatives, and offsets that point at the exact characters."""
import pytest

from scripts_app.analysis import GermanLexicon, LexiconUnavailable, analyze
from scripts_app.analysis.text import count_words


def findings(text, rule=None, max_seconds=None):
    result = analyze(text, max_seconds)
    for finding in result["findings"]:
        # Every finding points at its excerpt, whatever the rule.
        assert text[finding["offset"]:finding["offset"] + finding["length"]] == finding["excerpt"]
    return [f for f in result["findings"] if rule is None or f["rule"] == rule]


def excerpts(text, rule):
    return [f["excerpt"] for f in findings(text, rule)]


# --- umlaute -------------------------------------------------------------------

CORRECT_WORDS = ["neue", "Feuer", "teuer", "aktuell", "Dauer", "Quelle", "bequem", "Poesie", "Israel", "Michael",
                 "Koeffizient", "Steuer", "Abenteuer", "eventuell"]
SUBSTITUTED_WORDS = [("fuer", "für"), ("Rueckruf", "Rückruf"), ("koennen", "können"), ("waehrend", "während"),
                     ("Aenderung", "Änderung"), ("Gebuehr", "Gebühr"), ("moechten", "möchten"),
                     ("Oeffnungszeiten", "Öffnungszeiten"), ("zurueck", "zurück"), ("spaeter", "später")]


@pytest.mark.parametrize("word", CORRECT_WORDS)
@pytest.mark.parametrize("template", ["{}", "Das ist {} so.", "{}, sagte sie.", "({})", "„{}“!", "Gut.\n{} ist es"])
def test_umlaute_never_flags_correct_words(word, template):
    assert findings(template.format(word), "umlaute") == []


@pytest.mark.parametrize("word", CORRECT_WORDS)
def test_umlaute_never_flags_correct_words_in_any_case(word):
    assert findings(f"{word.upper()} {word.lower()} {word.capitalize()}", "umlaute") == []


@pytest.mark.parametrize("word, suggestion", SUBSTITUTED_WORDS)
@pytest.mark.parametrize("template", ["{} ist da.", "Bitte {}!", "Es geht ({}) weiter.", "„{}“", "Gut.\n{}, sofort"])
def test_umlaute_flags_substituted_words_with_exact_position(word, suggestion, template):
    text = template.format(word)
    (finding,) = findings(text, "umlaute")
    assert finding["excerpt"] == word
    assert finding["offset"] == text.index(word)
    assert finding["suggestion"] == suggestion
    assert finding["level"] == "error"
    assert suggestion in finding["message"]


@pytest.mark.parametrize("word, suggestion", [
    ("FUER", "FÜR"), ("Fuer", "Für"), ("fUer", "fÜr"), ("RUECKRUF", "RÜCKRUF"), ("AENDERUNG", "ÄNDERUNG"),
    ("rueckruf", "rückruf"), ("oeffnungszeiten", "öffnungszeiten"), ("ZurueCK", "ZurüCK"),
])
def test_umlaute_keeps_the_capitalisation_of_the_word(word, suggestion):
    (finding,) = findings(f"Hier {word} bitte", "umlaute")
    assert finding["suggestion"] == suggestion


@pytest.mark.parametrize("word, suggestion", [
    ("Rueckrufwunsch", "Rückrufwunsch"),        # compounds the word list does not spell out
    ("Terminaenderung", "Terminänderung"),
    ("Aenderungsgebuehr", "Änderungsgebühr"),    # several substitutions in one word
    ("Steuerbuero", "Steuerbüro"),               # only the substitution that makes a word
    ("zurueckrufen", "zurückrufen"),
])
def test_umlaute_finds_substitutions_in_compounds(word, suggestion):
    (finding,) = findings(f"Der {word} kommt.", "umlaute")
    assert (finding["excerpt"], finding["suggestion"]) == (word, suggestion)


def test_umlaute_checks_each_part_of_a_hyphenated_word():
    text = "Der Rueckruf-Service und die E-Mail-Adresse."
    (finding,) = findings(text, "umlaute")
    assert (finding["excerpt"], finding["offset"]) == ("Rueckruf", 4)


@pytest.mark.parametrize("text", [
    "Hallo {{fuer_name}}, schön.",
    "Mehr unter https://praxis.example/oeffnungszeiten-fuer-sie oder www.zurueck.de.",
    "Schreiben Sie an rueckruf@praxis-mueller.de.",
    "Besuchen Sie praxis-mueller.de/aenderung.",
])
def test_umlaute_never_checks_variables_and_urls(text):
    assert findings(text, "umlaute") == []


@pytest.mark.parametrize("text", [
    "Sie sprechen mit Frau Mueller.", "Herr Dr. Schroeder ist heute da.", "Praxis Dr. med. Anna Mueller-Schaefer.",
])
def test_umlaute_leaves_names_after_a_title_as_their_bearers_spell_them(text):
    assert findings(text, "umlaute") == []


def test_umlaute_checks_again_after_the_sentence_with_the_name_ends():
    assert excerpts("Das ist Herr Meier. Koennen Sie warten?", "umlaute") == ["Koennen"]


@pytest.mark.parametrize("text", ["Ein blue Button", "The queue is long.", "Does it work?", "Mit Bluetooth"])
def test_umlaute_leaves_english_words_alone(text):
    assert findings(text, "umlaute") == []


def test_missing_word_list_is_a_clear_error(tmp_path):
    with pytest.raises(LexiconUnavailable, match="wngerman"):
        GermanLexicon.from_file(tmp_path / "missing")


def test_lexicon_recognises_compounds_of_listed_words():
    lexicon = GermanLexicon(["Rückruf", "Wunsch", "Öffnung", "Zeiten", "Tee"])
    assert lexicon.is_word("rückrufwunsch")
    assert lexicon.is_word("öffnungszeiten")   # linking s
    assert not lexicon.is_word("rückrufwun")
    assert not lexicon.is_word("teetee" + "x")


# --- kundensicht ---------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("Wir rufen Sie an.", ["Wir"]),
    ("Sie erreichen uns morgen.", ["uns"]),
    ("Das ist unser Team, unsere Praxis, unseren Service.", ["unser", "unsere", "unseren"]),
    ("We call you back, talk to us about our offer.", ["We", "us", "our"]),
    ("WIR sind da.", ["WIR"]),
    ("(uns)", ["uns"]),
    ("Unsere Praxis", ["Unsere"]),
])
def test_kundensicht_flags_vendor_perspective(text, expected):
    assert excerpts(text, "kundensicht") == expected


@pytest.mark.parametrize("text", [
    "Die Wirkung ist gut.", "Das ist Unsinn.", "Der Kursus beginnt.", "Ein unseriöses Angebot gibt es nicht.",
    "Die Wirtschaft", "Preise in US-Dollar", "Mehr auf www.wir-helfen.de", "Hallo {{unser_name}}",
    "Sie erhalten Ihren Termin.",
])
def test_kundensicht_matches_whole_words_only(text):
    assert findings(text, "kundensicht") == []


def test_kundensicht_points_at_the_word():
    text = "Guten Tag.\nDann melden wir uns."
    wir, uns = findings(text, "kundensicht")
    assert (wir["line"], wir["column"], wir["offset"], wir["length"]) == (2, 13, 23, 3)
    assert (uns["line"], uns["column"], uns["excerpt"]) == (2, 17, "uns")
    assert wir["level"] == "warning" and wir["suggestion"] is None


# --- einwortzeile --------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("Guten Tag.\nDanke.\nBis bald.", ["Danke."]),
    ("Hallo!\nSie sind verbunden.", ["Hallo!"]),
    ("Sie sind verbunden.\n   Tschüss   \n", ["Tschüss"]),
    ("Okay", ["Okay"]),
])
def test_einwortzeile_flags_one_word_lines(text, expected):
    assert excerpts(text, "einwortzeile") == expected


@pytest.mark.parametrize("text", [
    "Guten Tag.\n\n   \nSie sind verbunden.",   # empty lines
    "Bis bald,\n{{firstName}}",                # a line that is only a variable
    "Bis bald,\n  {{firstName}}.  ",
    "Guten Tag, {{firstName}}.\nSie sind verbunden.",
    "Guten Tag.\n–\nSie sind verbunden.",       # a dash is no word
])
def test_einwortzeile_ignores_empty_and_variable_lines(text):
    assert findings(text, "einwortzeile") == []


def test_einwortzeile_points_at_the_trimmed_line():
    text = "Guten Tag.\r\n  Danke.  \r\nBis bald."
    (finding,) = findings(text, "einwortzeile")
    assert (finding["excerpt"], finding["line"], finding["column"], finding["offset"]) == ("Danke.", 2, 3, 14)


# --- doppelte-kennzeichnung ----------------------------------------------------

@pytest.mark.parametrize("text, term", [
    ("Sie sprechen mit einem digitalen Assistenten.", "digitalen Assistenten"),
    ("Ich bin eine KI.", "KI"),
    ("Hier spricht der KI-Assistent der Praxis.", "KI-Assistent"),
    ("Ein KI-gestützter Assistent hilft.", "KI-gestützter Assistent"),
    ("Sie sprechen mit künstlicher Intelligenz.", "künstlicher Intelligenz"),
    ("Hier ist Ihre virtuelle Assistentin.", "virtuelle Assistentin"),
    ("Sie hören eine automatisierte Stimme.", "automatisierte Stimme"),
    ("Unser Chatbot antwortet.", "Chatbot"),
    ("Der Voicebot nimmt auf.", "Voicebot"),
    ("Ein Bot nimmt Ihren Anruf an.", "Bot"),
    ("You are talking to an AI.", "AI"),
    ("This is a virtual assistant speaking.", "virtual assistant"),
    ("Powered by artificial intelligence.", "artificial intelligence"),
    ("You are talking to a bot.", "bot"),
    ("Digitaler\nAssistent am Apparat.", "Digitaler\nAssistent"),
])
def test_doppelte_kennzeichnung_finds_the_disclosure_term(text, term):
    (finding,) = findings(text, "doppelte-kennzeichnung")
    assert finding["excerpt"] == term
    assert finding["offset"] == text.index(term)


@pytest.mark.parametrize("text", [
    "Er bot uns Hilfe an.", "Der Kiosk hat offen.", "Die Kita in Kiel.", "Die Aida legt an.",
    "Unsere Mitarbeiterin hilft Ihnen.", "Schreiben Sie an ki@praxis.de.", "Hallo {{KI}}",
    "Ihre digitale Patientenakte ist bereit.", "Ich stimme zu.",
])
def test_doppelte_kennzeichnung_leaves_ordinary_words_alone(text):
    assert findings(text, "doppelte-kennzeichnung") == []


# --- dauer, words, variables -----------------------------------------------------

def test_dauer_fires_when_the_text_is_longer_than_max_seconds():
    text = " ".join(["Bitte"] * 23)  # 23 words = 12.5 s
    (finding,) = findings(text, "dauer", max_seconds=12)
    assert (finding["excerpt"], finding["offset"], finding["line"], finding["column"]) == (text, 0, 1, 1)
    assert finding["level"] == "warning" and "12,5" in finding["message"]
    assert findings(text, "dauer", max_seconds=13) == []


def test_dauer_needs_max_seconds():
    assert findings(" ".join(["Bitte"] * 500), "dauer") == []


@pytest.mark.parametrize("text, words, duration", [
    ("Guten Tag", 2, 1.1),
    ("Hallo {{vorname}}, Ihr Termin am {{datum}} steht.", 7, 3.8),
    ("Guten Tag – bis bald.", 4, 2.2),
    ("{{a}}{{b}}", 2, 1.1),
    ("Mehr unter www.praxis.example, um 10:30 Uhr.", 6, 3.3),
    (" ".join(["Bitte"] * 110), 110, 60.0),
])
def test_words_and_duration_at_110_words_per_minute(text, words, duration):
    result = analyze(text)
    assert (result["words"], result["durationSec"]) == (words, duration)


@pytest.mark.parametrize("text", [
    "Mehr unter www.praxis.example, um 10:30 Uhr.",
    "Hallo {{vorname}}, x{{a}}y – bis bald.\n{{ firma.name }}",
    "a://b www.) (http://) – … E-Mail geht's",
    "Schreiben Sie an rueckruf@praxis-mueller.de oder +@-.- (a URL without a letter is no word).",
])
def test_words_are_counted_as_count_words_counts_them(text):
    # The analysis counts words in the same pass that finds URLs and words.
    assert analyze(text)["words"] == count_words(text)


def test_variables_in_order_of_first_appearance_without_duplicates():
    result = analyze("Hallo {{vorname}}, Ihr Termin am {{datum}} steht, {{vorname}}. {{ firma.name }}")
    assert result["variables"] == ["vorname", "datum", "firma.name"]


def test_findings_come_in_text_order_with_all_fields():
    text = "Wir rufen fuer Sie an.\nDanke."
    result = analyze(text, 30)
    assert [f["rule"] for f in result["findings"]] == ["kundensicht", "umlaute", "einwortzeile"]
    for finding in result["findings"]:
        assert set(finding) == {"rule", "level", "message", "line", "column", "offset", "length", "excerpt",
                                "suggestion"}


def test_analysis_is_linear_in_the_text():
    # The same paragraph many times gives the same findings many times (no cap, no
    # state carried between paragraphs).
    paragraph = "Wir rufen Sie zurueck.\nDanke.\n"
    one, many = analyze(paragraph), analyze(paragraph * 50)
    assert len(many["findings"]) == 50 * len(one["findings"])
    assert many["words"] == 50 * one["words"]
