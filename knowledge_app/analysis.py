"""The words of German text as the full-text index sees them (imports no Django).

Both databases stem with Snowball's German algorithm: PostgreSQL's `german` text
search configuration is Snowball's German stemmer with Snowball's German stop words,
and on SQLite the same stemmer runs here, in Python (the `snowballstemmer` package),
on passages and queries alike (knowledge_app/index.py). So `Terminen`, `Termine` and
`Termin` are one word, and `Zähne` is `zahn`.

Stemming does not split compounds (`Zahnreinigung` is not `Reinigung`), and the
platform has no compound dictionary that PostgreSQL could use. Two cheap rules cover
the common cases without one:

- the tails of a passage's long words are indexed beside them, with less weight
  (`compound_tails`): `Öffnungszeiten` is also found by `Zeiten`, `Zahnreinigung`
  by `Reinigung` (German compounds end in their head word);
- a long query word adds its heads and tails as alternatives (`query_terms`):
  `Zahnreinigung` also asks for `Zahn…` and `Reinigung`, which finds "die Reinigung
  Ihrer Zähne". Heads are asked as prefixes, so `Termin` finds `Terminvereinbarung`.

Tails and heads that are no words (`hnreinigung`) match nothing, or by chance a
rare word; they weigh little in the ranking either way.
"""
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import snowballstemmer

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
# A prefix query needs a stem this long (`zahn*`, not `ab*`).
PREFIX_MIN = 4
# Linking elements a compound's head may end in (`Öffnung·s·zeiten`, `Kunde·n·nummer`).
LINKS = ("es", "en", "s", "n")
# At most this many words of a query are looked at (a query is a question, not a document).
MAX_QUERY_WORDS = 32

_stemmer = snowballstemmer.stemmer("german")


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


def compound_tails(text):
    """The tails of `text`'s long words (`zahnreinigung` → `reinigung`, `einigung`, …),
    each once, space-separated: indexed beside the passage, with less weight."""
    tails = []
    seen = set()
    for word in words(text):
        if len(word) < COMPOUND_MIN or not word.isalpha():
            continue
        for cut in range(PART_MIN - 1, len(word) - PART_MIN + 1):
            tail = word[cut:]
            if tail not in seen:
                seen.add(tail)
                tails.append(tail)
    return " ".join(tails)


@dataclass(frozen=True)
class Term:
    """One alternative of a query: a word (normalised, unstemmed: PostgreSQL stems it
    itself, SQLite through `stem`), asked as a prefix or exactly."""

    word: str
    prefix: bool

    @property
    def stem(self):
        return stem(self.word)


def _heads_and_tails(word):
    for cut in range(PART_MIN, len(word) - PART_MIN + 1):
        head, tail = word[:cut], word[cut:]
        yield head, tail
        for link in LINKS:
            if head.endswith(link) and len(head) - len(link) >= PART_MIN:
                yield head[: -len(link)], tail


def query_terms(query, synonyms=()):
    """The alternatives a query asks for (any of them matches; the ranking prefers
    passages with more and rarer ones): its words but stop words, each as a prefix
    when its stem is long enough; the other members of each synonym group one of its
    members appears in; the heads (as prefixes) and tails of its long words.

    `synonyms`: groups of terms (each a word or a few words), e.g.
    `[["Sprechzeiten", "Öffnungszeiten", "geöffnet"]]`; a member of several words
    counts as present when all its words are."""
    query_words = [word for word in words(query)[:MAX_QUERY_WORDS] if word not in STOP_WORDS]
    terms = {}

    def add(word, prefix):
        if word in STOP_WORDS or not word:
            return
        prefix = prefix and len(stem(word)) >= PREFIX_MIN
        terms[word] = terms.get(word, False) or prefix

    for word in query_words:
        add(word, True)
    present = {stem(word) for word in query_words}
    for group in synonyms:
        members = [[stem(word) for word in words(member) if word not in STOP_WORDS] for member in group]
        if any(member and all(s in present for s in member) for member in members):
            for member in group:
                for word in words(member):
                    add(word, True)
    for word in list(terms):
        if len(word) >= COMPOUND_MIN and word.isalpha():
            for head, tail in _heads_and_tails(word):
                add(head, True)
                add(tail, False)
    return [Term(word, prefix) for word, prefix in terms.items()]
