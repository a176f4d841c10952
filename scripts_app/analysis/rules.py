"""The five rules of the spoken-text linter (spec: Analysis rules; CONTRACT §3).

Each rule takes a `Script` (the text read once) and yields findings. The word rules
never look inside variables or URLs: those are blanked out in `script.checked`.
"""
import re
from functools import lru_cache
from itertools import combinations

from scripts_app.analysis.text import VARIABLE, count_words

ERROR, WARNING = "error", "warning"
WORDS_PER_MINUTE = 110


def seconds_text(seconds):
    """`12.5` → `12,5` (the messages are German)."""
    return f"{seconds:g}".replace(".", ",")


# --- dauer -------------------------------------------------------------------


def dauer(script):
    if script.max_seconds is None or script.duration_sec <= script.max_seconds:
        return
    surplus = script.words - int(script.max_seconds * WORDS_PER_MINUTE / 60)
    yield script.finding(
        "dauer", WARNING,
        f"Gesprochen dauert der Text etwa {seconds_text(script.duration_sec)} s, vorgesehen sind höchstens "
        f"{seconds_text(script.max_seconds)} s. Kürzen Sie ihn um etwa {surplus} Wörter.",
        0, len(script.text),
    )


# --- kundensicht -------------------------------------------------------------

# Whole words only (`Wirkung`, `Unsinn`, `unseriös` are fine), in any case.
VENDOR_WORDS = frozenset({
    "wir", "uns", "unser", "unsere", "unserem", "unseren", "unserer", "unseres", "unsers",
    "unsre", "unsrem", "unsren", "unsrer", "unsres", "unsrige", "unsrigen",
    "unsererseits", "unseresgleichen", "unsertwegen", "unsretwegen",
    "we", "us", "our", "ours", "ourselves",
})
# All-caps abbreviations that look like vendor words: `US` (United States), `WE`
# (Wochenende).
ABBREVIATIONS = frozenset({"US", "WE"})


def kundensicht(script):
    for index in script.indices_of(VENDOR_WORDS):
        start, word = script.words_checked[index]
        if word not in ABBREVIATIONS:
            yield script.finding(
                "kundensicht", WARNING,
                f"„{word}“ spricht aus Sicht des Unternehmens. Sprechen Sie den Anrufer an, "
                "z. B. „Sie erhalten …“ statt „Wir senden Ihnen …“.",
                start, len(word),
            )


# --- umlaute -----------------------------------------------------------------

DIGRAPH = re.compile(r"[aou]e")
# The umlaut for the first letter of a digraph, in that letter's case.
UMLAUT = {"a": "ä", "o": "ö", "u": "ü", "A": "Ä", "O": "Ö", "U": "Ü"}
# Words with more substitutions than this are not German words anyway; the cap keeps
# the number of candidates (2^n) small.
MAX_DIGRAPHS = 4


@lru_cache(maxsize=65536)
def umlaut_positions(lexicon, lower):
    """Where `ae`/`oe`/`ue` stand for umlauts in the lower-case word `lower`: the
    positions of the digraphs to replace, or None when the word is fine as written
    (or no replacement makes it a German word). Most replacements first, so
    `aenderungsgebuehr` becomes `änderungsgebühr`."""
    if lexicon.is_word(lower):
        return None
    found = [match.start() for match in DIGRAPH.finditer(lower)]
    if not found or len(found) > MAX_DIGRAPHS:
        return None
    for size in range(len(found), 0, -1):
        for chosen in combinations(found, size):
            if lexicon.is_word(_with_umlauts(lower, chosen)):
                return chosen
    return None


def _with_umlauts(word, positions):
    """`word` with the digraph at each position replaced by its umlaut, keeping the
    case of the digraph's first letter (`Oe` → `Ö`, `UE` → `Ü`, `ae` → `ä`)."""
    # Back to front, so that the positions still to replace stay where they were.
    for at in reversed(positions):
        word = word[:at] + UMLAUT[word[at]] + word[at + 2:]
    return word


# A name is spelt as its bearer spells it (`Frau Mueller`, `Dr. med. Schroeder`):
# capitalised words right after a form of address or title are not checked.
TITLES = frozenset({"herr", "herrn", "frau", "familie", "dr", "prof", "dipl", "ing", "med", "dent", "vet"})
# After a title its abbreviation dot may follow (`Dr. Weber`); between the parts of
# a name only spaces and hyphens (`Anna Mueller-Schaefer`): a dot there ends a sentence.
GAP_AFTER_TITLE = re.compile(r"[\s.]*")
GAP_IN_NAME = re.compile(r"[ \t-]*")
# `Frau Anna Mueller-Schaefer`: at most three capitalised words (hyphenated parts
# count) after the title; a further one is taken for a noun again.
MAX_NAME_WORDS = 3


def is_name(script, index):
    """Whether word `index` of the script is part of a name after a form of address or
    title: up to MAX_NAME_WORDS capitalised words, then (going back) a title."""
    words, text = script.words_checked, script.checked
    start, word = words[index]
    if not word[0].isupper():
        return False
    # The loop below looks at most MAX_NAME_WORDS words back and is only True at a
    # title: without a title among them, no need to look at the gaps.
    if TITLES.isdisjoint(script.lower_words[max(0, index - MAX_NAME_WORDS):index]):
        return False
    name_words = 1
    while index > 0:
        previous_start, previous = words[index - 1]
        gap = text[previous_start + len(previous):start]
        if script.lower_words[index - 1] in TITLES:
            return GAP_AFTER_TITLE.fullmatch(gap) is not None
        if not (previous[0].isupper() and GAP_IN_NAME.fullmatch(gap) and name_words < MAX_NAME_WORDS):
            return False
        name_words += 1
        index, start = index - 1, previous_start
    return False


def umlaute(script):
    # Most words have no digraph, and scripts repeat their words: each distinct word
    # is tested once, then only the words with a digraph to replace are looked at.
    replaceable = {}
    for lower in set(script.lower_words):
        if ("ue" in lower or "ae" in lower or "oe" in lower) and len(lower) >= 3:
            positions = umlaut_positions(script.lexicon, lower)
            if positions is not None:
                replaceable[lower] = positions
    for index in script.indices_of(replaceable):
        start, word = script.words_checked[index]
        lower = script.lower_words[index]
        # Lower case must not change the length (`İ`), or the positions would not fit
        # the word; with it, the word has at least 3 letters too.
        if len(lower) != len(word) or is_name(script, index):
            continue
        positions = replaceable[lower]
        suggestion = _with_umlauts(word, positions)
        yield script.finding(
            "umlaute", ERROR,
            f"„{word}“ umschreibt einen Umlaut, die Sprachausgabe liest das falsch vor. "
            f"Schreiben Sie „{suggestion}“.",
            start, len(word), suggestion,
        )


# --- einwortzeile ------------------------------------------------------------

LETTER_OR_DIGIT = re.compile(r"[^\W_]")


def einwortzeile(script):
    for line_start, line in zip(script.line_starts, script.lines, strict=True):
        trimmed = line.strip()
        # Most lines start with two spoken words (here: tokens that start with a
        # letter or digit, the cheapest sufficient test): no full count.
        first = trimmed.split(None, 2)
        if len(first) >= 2 and first[0][0].isalnum() and first[1][0].isalnum() and "{{" not in trimmed:
            continue
        if not trimmed or count_words(trimmed) != 1:
            continue
        if VARIABLE.search(trimmed) and not LETTER_OR_DIGIT.search(VARIABLE.sub("", trimmed)):
            continue  # a line that is only a variable, e.g. a name filled in at call time
        yield script.finding(
            "einwortzeile", WARNING,
            f"Die Zeile „{trimmed}“ besteht aus einem Wort und klingt gesprochen abgehackt. "
            "Verbinden Sie sie mit dem Satz davor oder danach.",
            line_start + line.index(trimmed[0]), len(trimmed),
        )


# --- doppelte-kennzeichnung --------------------------------------------------

_DE_QUALIFIER = (
    r"(?:digital|virtuell|automatisiert|automatisch|computergeneriert|synthetisch|künstlich|kuenstlich"
    r"|maschinell|KI-gestützt|KI-basiert)(?:e|er|en|em|es)?"
)
_DE_SPEAKER = (
    r"(?:Sprach|Telefon)?(?:assistent(?:in|en|innen)?|agent(?:in|en|innen)?|stimme|mitarbeiter(?:in|innen|s|n)?"
    r"|gesprächspartner(?:in|innen|s|n)?|kollege|kollegin|kollegen)"
)
_EN_QUALIFIER = r"(?:virtual|digital|automated|artificial|computer-generated|synthetic|AI|AI-powered)"
_EN_SPEAKER = r"(?:assistant|agent|voice|system|receptionist)s?"
# One pattern, longest phrases first, so that `KI-gestützter Assistent` is one term
# and not also `KI`. Qualifier phrases ignore case; `KI`, `AI` and `Bot` must be
# written as such (`bot` is also the past tense of `bieten`).
AI_DISCLOSURE = re.compile(
    rf"\b(?i:{_DE_QUALIFIER}\s+{_DE_SPEAKER}"
    rf"|künstliche[nr]?\s+Intelligenz|kuenstliche[nr]?\s+Intelligenz"
    rf"|{_EN_QUALIFIER}\s+{_EN_SPEAKER}|artificial\s+intelligence"
    rf"|Computerstimme|Sprachcomputer|Sprachroboter|Telefonroboter)\b"
    rf"|\b(?:KI|AI)(?:-[^\W\d_]+)*\b"
    rf"|\b(?:(?i:chat|voice|sprach|telefon|phone|call)bots?|Bots?)\b"
    rf"|(?<=\b[Aa]\s)bot\b|(?<=\b[Tt]he\s)bot\b",
)


# The words a disclosure term can start with (lower case). The pattern is tried only
# at such a word, which keeps the rule linear and cheap: scanning a whole text with a
# pattern of many alternatives costs far more than one set lookup per word.
_ENDINGS = ("", "e", "er", "en", "em", "es")
DISCLOSURE_STARTS = frozenset(
    [stem + ending for stem in ("digital", "virtuell", "automatisiert", "automatisch", "computergeneriert",
                                "synthetisch", "künstlich", "kuenstlich", "maschinell") for ending in _ENDINGS]
    + ["ki", "ai", "virtual", "digital", "automated", "artificial", "computer", "synthetic",
       "computerstimme", "sprachcomputer", "sprachroboter", "telefonroboter", "bot", "bots"]
    + [prefix + suffix for prefix in ("chat", "voice", "sprach", "telefon", "phone", "call") for suffix in ("bot", "bots")]
)


def doppelte_kennzeichnung(script):
    covered_until = 0
    for index in script.indices_of(DISCLOSURE_STARTS):
        start = script.words_checked[index][0]
        if start < covered_until:
            continue
        match = AI_DISCLOSURE.match(script.checked, start)
        if match is None:
            continue
        term, covered_until = match.group(0), match.end()
        yield script.finding(
            "doppelte-kennzeichnung", WARNING,
            f"„{term}“ kennzeichnet den Anruf als KI-Gespräch. Dieser Hinweis wird zu Gesprächsbeginn "
            "automatisch vorangestellt; entfernen Sie ihn aus dem Skript.",
            start, len(term),
        )


RULES = (dauer, kundensicht, umlaute, einwortzeile, doppelte_kennzeichnung)
