"""The words of German text as the full-text index sees them (imports no Django).

Both databases stem with Snowball's German algorithm: PostgreSQL's `german` text
search configuration is Snowball's German stemmer with Snowball's German stop words,
and on SQLite the same stemmer runs here (the `PyStemmer` package, Snowball's C
library), on passages and queries alike (knowledge_app/index.py). So `Terminen`, `Termine` and
`Termin` are one word, and `Zähne` is `zahn`.

Stemming neither splits compounds (`Zahnreinigung` is not `Reinigung`) nor finds
longer words (`Termin`, `Terminvereinbarung`), and the platform has no compound
dictionary that PostgreSQL could use. The tenant's own vocabulary does the work
instead (`vocabulary`: the `KnowledgeTerm` rows of its documents, each distinct word
under its stem, each long word also under its tails' stems). A query then asks for,
besides its own words (`query_terms`):

- the tenant's words that begin with a query word's stem (`Termin` →
  `Terminvereinbarung`, `Zähne` → `Zahnreinigung`);
- the tenant's long words that end in it (`Reinigung` → `Zahnreinigung`, `Zeiten` →
  `Öffnungszeiten`): German compounds end in their head word;
- the heads and tails of a long query word that are words of the tenant
  (`Zahnreinigung` → `Zahn`, `Reinigung`: finds "die Reinigung Ihrer Zähne");
- the other members of the tenant's synonym groups a query word belongs to.

So every alternative asked is a word the tenant's passages contain (or a word of the
query itself): no fragments (`hnreinigung`), no prefix scans over the whole index,
and the full-text index holds only the passages' own words.
"""
import math
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import Stemmer

# Letters and digits; `_` and everything else separates words (as in PostgreSQL's parser).
WORD = re.compile(r"[^\W_]+")

# Snowball's German stop word list, the one PostgreSQL's `german` configuration reads
# (tsearch_data/german.stop), so that both databases skip the same words.
STOP_WORDS = frozenset("""
aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes anderm andern
anderr anders auch auf aus bei bin bis bist da damit dann der den des dem die das daß derselbe derselben
denselben desselben demselben dieselbe dieselben dasselbe dazu dein deine deinem deinen deiner deines denn
derer dessen dich dir du dies diese diesem diesen dieser dieses doch dort durch ein eine einem einen einer
eines einig einige einigem einigen einiger einiges einmal er ihn ihm es etwas euer eure eurem euren eurer
eures für gegen gewesen hab habe haben hat hatte hatten hier hin hinter ich mich mir ihr ihre ihrem ihren
ihrer ihres euch im in indem ins ist jede jedem jeden jeder jedes jene jenem jenen jener jenes jetzt kann
kein keine keinem keinen keiner keines können könnte machen man manche manchem manchen mancher manches mein
meine meinem meinen meiner meines mit muss musste nach nicht nichts noch nun nur ob oder ohne sehr sein seine
seinem seinen seiner seines selbst sich sie ihnen sind so solche solchem solchen solcher solches soll sollte
sondern sonst über um und uns unsere unserem unseren unser unseres unter viel vom von vor während war waren
warst was weg weil weiter welche welchem welchen welcher welches wenn werde werden wie wieder will wir wird
wirst wo wollen wollte würde würden zu zum zur zwar zwischen
""".split())

# A word this long may be a compound: its tails are indexed, its parts asked for.
COMPOUND_MIN = 9
# The shortest head and tail of a compound that count (`Zahn`, `Arzt`, `Zeit`).
PART_MIN = 4
# A query word's stem this long is looked up as a prefix (`zahn…`, not `ab…`).
PREFIX_MIN = 4
# Linking elements a compound's head may end in (`Öffnung·s·zeiten`, `Kunde·n·nummer`).
LINKS = ("es", "en", "s", "n")
# At most this many words of a query are looked at (a query is a question, not a
# document), and at most this many alternatives asked: its words first, then synonyms,
# then the parts of compounds.
MAX_QUERY_WORDS = 32
MAX_TERMS = 96
# Longer "words" are codes or garbage, not compounds.
MAX_WORD = 40

_stemmer = Stemmer.Stemmer("german")


def normalized(text):
    """NFKC (ligatures such as `ﬁ` from PDFs, composed umlauts) and case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


def words(text):
    """The words of `text`, normalised, stop words included."""
    return WORD.findall(normalized(text))


@lru_cache(maxsize=131072)
def stem(word):
    """The Snowball German stem of a normalised word (`zähne` → `zahn`)."""
    return _stemmer.stemWord(word)


def stems(text):
    """The stems of `text`'s words without stop words, in order, space-separated: what
    SQLite's full-text table holds for a passage (a SQL function of the same name)."""
    if not text:
        return ""
    return " ".join(stem(word) for word in words(text) if word not in STOP_WORDS)


def vocabulary(texts):
    """(stem, word, whole, passages) rows of the words of `texts` (a document's
    passages, each with its heading and the title): each distinct word but stop words
    under its stem (whole), each long word also under the stem of each of its tails
    (`zahnreinigung` under `reinig`, `einig`, …); `passages`: in how many of `texts`
    the word is."""
    counts = {}
    for text in texts:
        for word in set(words(text)):
            if word not in STOP_WORDS and len(word) <= MAX_WORD:
                counts[word] = counts.get(word, 0) + 1
    rows = set()
    for word, passages in counts.items():
        rows.add((stem(word)[:MAX_WORD], word, True, passages))
        if len(word) >= COMPOUND_MIN and word.isalpha():
            for cut in range(PART_MIN - 1, len(word) - PART_MIN + 1):
                tail = stem(word[cut:])
                if len(tail) >= PART_MIN and tail not in STOP_WORDS:
                    rows.add((tail, word, False, passages))
    return rows


@dataclass(frozen=True)
class Lookup:
    """What a query asks of the tenant's vocabulary (all stems)."""

    prefixes: frozenset  # words that begin with these
    tails: frozenset  # long words that end in these
    parts: frozenset  # words that are these


@dataclass(frozen=True)
class Query:
    """The words a query asks for, each with its weight in the ranking: how rare it
    is among the tenant's passages (an inverse document frequency), less for words the
    vocabulary added than for the query's own; and the share of the tenant's passages
    that have it. Without a vocabulary every word weighs 1 and its share is unknown (0)."""

    words: tuple
    weights: tuple
    shares: tuple = ()
    passages: int = 0  # the tenant's

    def rare_words(self, most):
        """The words in at most the share `most` of the passages (all words when none is)."""
        rare = tuple(word for word, share in zip(self.words, self.shares or (0,) * len(self.words), strict=True)
                     if share <= most)
        return rare or self.words

    def __bool__(self):
        return bool(self.words)


# What a word the vocabulary added (a prefix, tail or part) weighs beside the query's own.
ADDED_WEIGHT = 0.6


def _idf(df, passages):
    return math.log(1 + (passages - df + 0.5) / (df + 0.5))


def _parts(word):
    """Stems of the heads and tails of a long word (a linking `s`, `es`, `n`, `en`
    dropped from a head: `öffnungs` → `öffnung`)."""
    for cut in range(PART_MIN, len(word) - PART_MIN + 1):
        head, tail = word[:cut], word[cut:]
        yield stem(head)
        yield stem(tail)
        for link in LINKS:
            if head.endswith(link) and len(head) - len(link) >= PART_MIN:
                yield stem(head[: -len(link)])


def query_terms(query, synonyms=(), lookup=None):
    """The words a query asks for (any of them matches; the ranking prefers passages
    with more and rarer ones), as a `Query`: its words but stop words, the other
    members of each synonym group one of its words belongs to, and what the tenant's
    vocabulary adds (module docstring).

    `lookup(Lookup)` → `{"prefixes": {stem: [words]}, "tails": {stem: [words]},
    "parts": {stem: [words]}, "df": {stem: passages with it}, "passages": n}`
    (knowledge_app/index.py); None: no vocabulary.

    `synonyms`: groups of terms (each a word or a few words), e.g.
    `[["Sprechzeiten", "Öffnungszeiten", "geöffnet"]]`; a member of several words
    counts as present when all its words are."""
    asked = []

    def add(word):
        if word and word not in STOP_WORDS and word not in asked and len(asked) < MAX_TERMS:
            asked.append(word)

    query_words = [word for word in words(query)[:MAX_QUERY_WORDS] if word not in STOP_WORDS]
    for word in query_words:
        add(word)
    present = {stem(word) for word in query_words}
    for group in synonyms:
        members = [[stem(word) for word in words(member) if word not in STOP_WORDS] for member in group]
        if any(member and all(s in present for s in member) for member in members):
            for member in group:
                for word in words(member):
                    add(word)
    if lookup is None:
        return Query(tuple(asked), (1.0,) * len(asked))
    own = list(asked)
    own_stems = {stem(word) for word in own}
    stems = {s for s in own_stems if len(s) >= PREFIX_MIN}
    parts = {part for word in own if len(word) >= COMPOUND_MIN and word.isalpha() for part in _parts(word)}
    found = lookup(Lookup(frozenset(stems), frozenset(stems), frozenset((parts | own_stems) - stems)))
    for kind in ("parts", "tails", "prefixes"):
        for key in sorted(found.get(kind, {})):
            for word in found[kind][key]:
                add(word)
    df, passages = found.get("df", {}), max(found.get("passages", 0), 1)
    kept, stems_kept = [], set()
    for word in asked:  # the query's own words first: a stem once, with their weight
        if stem(word) not in stems_kept:
            stems_kept.add(stem(word))
            # A word of the query the vocabulary does not know is kept as the rarest of
            # all: it costs one empty look-up, and the index is the truth, not the vocabulary.
            count = min(df.get(stem(word), 0), passages)
            kept.append((word, _idf(count, passages) * (1.0 if word in own else ADDED_WEIGHT), count / passages))
    return Query(tuple(word for word, _, _ in kept), tuple(weight for _, weight, _ in kept),
                 tuple(share for _, _, share in kept), passages)
