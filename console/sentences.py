"""German text cut into sentences: the one splitter of the platform (imports no Django).

Used where a sentence ends matters: the voice agent speaking a streamed answer sentence
by sentence (agent_app.mind), the offline policy picking the sentences of a knowledge
passage (agent_app.policy) and the knowledge's passages (knowledge_app.splitting, which
may import this module and nothing else of the core: docs/architecture.md).

A language model's answer, streamed in pieces, cut into sentences as they complete.

The voice agent speaks while the model streams (agent_app.mind): the first complete
sentence goes to synthesis at once, the next while the first is being spoken. A
sentence ends at `.`, `!`, `?` or `…` (closing quotes and brackets kept) followed by
white space, or at a line break — but not after the abbreviations the German
normaliser reads out ("z. B.", "Dr.", "Nr.", "ca.": ABBREVIATIONS below), an initial
("A. Schmidt"), a day or an ordinal ("am 3. Mai", "1. Stock"; but "Hauptstr. 12. Wir …"
ends: SENTENCE_OPENERS), nor where the next word
starts in lower case or with a digit ("ca. 5 Minuten", "Hauptstr. 12"). A period is
decided only once the next word's first letter is there: one token later, about 30 ms
of a streaming model (`!` and `?` at once). Whatever is left at the end of the answer is its last sentence
(`flush`).

The first piece of a reply may be a clause: with `clause_first`, a comma, semicolon or
colon followed by white space also ends the first piece ("Gern," — "Ja, gerne,"), so
the caller hears the agent start after the model's first words rather than its first
whole sentence (at 30 tokens a second a sentence of ten words is a third of a second
more); what follows is cut at sentence ends only. Voice platforms chunk the same way
(a first chunk at a clause boundary); eSpeak pauses at the comma anyway.

The abbreviations are declared once, here, with their spoken forms: the normaliser
(speech_app.spoken) reads them out, and a period after one ends no sentence.
"""
import re

# Abbreviations with their spoken form; the several-letter ones with optional spaces.
ABBREVIATIONS = [
    (r"z\.\s?B\.", "zum Beispiel"), (r"u\.\s?a\.", "unter anderem"), (r"d\.\s?h\.", "das heißt"),
    (r"u\.\s?U\.", "unter Umständen"), (r"o\.\s?Ä\.", "oder Ähnliches"), (r"v\.\s?a\.", "vor allem"),
    (r"i\.\s?d\.\s?R\.", "in der Regel"), (r"u\.\s?v\.\s?m\.", "und vieles mehr"), (r"s\.\s?o\.", "siehe oben"),
    (r"s\.\s?u\.", "siehe unten"), (r"z\.\s?T\.", "zum Teil"), (r"z\.\s?Zt\.", "zurzeit"), (r"i\.\s?A\.", "im Auftrag"),
    (r"usw\.", "und so weiter"), (r"bzw\.", "beziehungsweise"), (r"ca\.", "circa"), (r"inkl\.", "inklusive"),
    (r"exkl\.", "exklusive"), (r"zzgl\.", "zuzüglich"), (r"ggf\.", "gegebenenfalls"), (r"evtl\.", "eventuell"),
    (r"bzgl\.", "bezüglich"), (r"gem\.", "gemäß"), (r"vgl\.", "vergleiche"), (r"etc\.", "et cetera"),
    (r"Dr\.", "Doktor"), (r"Prof\.", "Professor"), (r"Hr\.", "Herr"), (r"Fa\.", "Firma"), (r"St\.", "Sankt"),
    (r"Str\.", "Straße"), (r"str\.", "straße"), (r"Nr\.", "Nummer"), (r"Tel\.", "Telefon"), (r"Abs\.", "Absatz"),
    (r"Abt\.", "Abteilung"), (r"Mio\.", "Millionen"), (r"Mrd\.", "Milliarden"), (r"Tsd\.", "Tausend"),
    (r"MwSt\.?", "Mehrwertsteuer"), (r"Std\.", "Stunden"), (r"Min\.", "Minuten"), (r"Sek\.", "Sekunden"),
    (r"Jh\.", "Jahrhundert"), (r"Mobil:", "Mobil:"), (r"max\.", "maximal"), (r"min\.", "mindestens"),
    (r"geb\.", "geboren"), (r"allg\.", "allgemein"), (r"Kl\.", "Klasse"), (r"Whg\.", "Wohnung"),
]


def either_case(pattern: str) -> str:
    """`pattern` also with its first letter in the other case ("Evtl." opens a sentence)."""
    first = pattern[0]
    return f"[{first}{first.swapcase()}]{pattern[1:]}" if first.isalpha() and first.swapcase() != first else pattern


ABBREVIATION = re.compile(
    "|".join(rf"(?<![\w.])(?:{either_case(pattern)})" for pattern, _ in ABBREVIATIONS))
# An abbreviation at the very end of a text (its period ends no sentence).
_ABBREVIATION_AT_END = re.compile(rf"(?:{ABBREVIATION.pattern})$")
ABBREVIATION_WORDS = {re.sub(r"\s", "", pattern.replace("\\s?", "").replace("\\", "")).rstrip("?"): spoken
                       for pattern, spoken in ABBREVIATIONS}


def ends_with_abbreviation(text: str) -> bool:
    """Whether `text` ends with one of the abbreviations the normaliser reads out
    ("z. B.", "Dr.", "Nr."): a period there ends no sentence."""
    return _ABBREVIATION_AT_END.search(text) is not None


# A sentence mark and the white space after it, or a line break; with a clause mark
# for a reply's first piece.
_BREAK = re.compile(r"[.!?…]+[\"'»«“”„)\]]*\s+|\n\s*")
_CLAUSE_OR_BREAK = re.compile(r"[.!?…]+[\"'»«“”„)\]]*\s+|[,;:][\"'»«“”„)\]]*\s+|\n\s*")
_LAST_WORD = re.compile(r"(\S+)\.$")
_FIRST_WORD = re.compile(r"([^\W\d_]+)[\W\d_]")
# Words that open a German sentence and never follow an ordinal ("1. Stock", "3. Mai").
SENTENCE_OPENERS = frozenset(
    "Wir Sie Ich Er Es Du Ihr Man Die Der Das Dies Diese Dieser Dieses Ein Eine Bitte Unsere Unser Ihre Dort Hier "
    "Danach Dann Auch Außerdem Wenn Falls Bei Für Gern Gerne Leider Vielen Sonst".split())


class Sentences:
    """feed(piece) → the sentences the piece completed; flush() → the rest."""

    def __init__(self, *, clause_first: bool = False) -> None:
        self.buffer = ""
        self.clause = clause_first  # until the first piece was handed on

    def feed(self, piece: str) -> list[str]:
        self.buffer += piece
        done: list[str] = []
        searched = 0
        while (found := (_CLAUSE_OR_BREAK if self.clause else _BREAK).search(self.buffer, searched)) is not None:
            verdict = self._ends_sentence(found)
            if verdict is None:  # the next word decides; it has not come yet
                break
            if not verdict:
                searched = found.end()
                continue
            sentence, self.buffer = self.buffer[:found.end()].strip(), self.buffer[found.end():]
            searched = 0
            if sentence:
                done.append(sentence)
                self.clause = False
        return done

    def flush(self) -> str:
        rest, self.buffer = self.buffer.strip(), ""
        return rest

    def _ends_sentence(self, found: re.Match[str]) -> bool | None:
        """True, False, or None while the word after the mark has not arrived."""
        mark = found.group().strip()
        if not mark or mark[0] in ",;:":  # a line break, or the first piece's clause
            return True
        if "!" in mark or "?" in mark:
            return True
        following = self.buffer[found.end():]
        if not following:
            return None
        upcoming = following[0]
        if upcoming.islower() or upcoming.isdigit():
            return False  # "ca. 5 Minuten", "usw. und", an ellipsis mid-sentence
        if not mark.startswith(".") or mark.startswith(".."):
            return True  # an ellipsis before a capital
        before = self.buffer[:found.start() + 1]
        if ends_with_abbreviation(before):
            return False
        word = _LAST_WORD.search(before)
        token = word.group(1) if word else ""
        if len(token) == 1 and token.isalpha():  # an initial, or the "z." of a "z. B." still coming
            return False
        if re.fullmatch(r"[(\[]?\d{1,2}", token):  # a day or an ordinal: "am 3. Mai", "1. Stock"
            # … unless a sentence opens after it ("Hauptstr. 12. Wir rufen …"): an ordinal
            # stands before a noun or a month, never before a pronoun or an article.
            word = _FIRST_WORD.match(following)
            if word is None:
                return None  # the next word is not complete yet
            return word.group(1) in SENTENCE_OPENERS
        return True


def split_sentences(text: str) -> list[str]:
    """The sentences of a whole text (as Sentences cuts a stream): "Praxis Dr. Weber",
    "Hauptstr. 5", "z. B.", "Nr. 3", "am 3. Dezember" and "1. Stock" stay whole."""
    cutter = Sentences()
    found = cutter.feed(text)
    rest = cutter.flush()
    return [*found, rest] if rest else found
