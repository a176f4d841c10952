"""The German lexicon of the `umlaute` rule.

The words come from Debian's `wngerman` package (/usr/share/dict/ngerman, the
word list of the maintained igerman98 spell-checker dictionary, new orthography),
installed by `make run`/`make test` (Makefile SYSTEM_PACKAGES). No word is listed by
hand here.

Lookups are case-insensitive: the list keeps a word that exists capitalised and in
lower case only once (`feuer`, not `Feuer`), and a spoken script capitalises words at
sentence starts. The list does not spell out every compound (`Rückrufwunsch`,
`Terminänderung`), so a word that is not listed counts as German when it splits into
listed words, optionally joined by a linking element (`Öffnung·s·zeiten`).
"""
import threading
from functools import lru_cache

DEFAULT_WORDLIST = "/usr/share/dict/ngerman"
INSTALL_HINT = "Install the German word list: apt-get install wngerman (or run `make run`/`make test`)."

# Compound parts: shorter parts and all-caps entries (abbreviations such as `AOK`,
# `DFÜ`) would let almost any string split into "words".
MIN_PART = 3
MAX_PARTS = 3
# Linking elements between compound parts (Fugenelemente): `Öffnung·s·zeiten`,
# `Gebühr·en·ordnung`, `Kunde·n·nummer`; a head may also drop its final `e`
# (`Schul·buch` from `Schule`).
LINKS = ("s", "es", "n", "en", "er", "e")


class LexiconUnavailable(RuntimeError):
    pass


class GermanLexicon:
    def __init__(self, words):
        self._words = set()
        self._parts = set()
        for word in words:
            word = word.strip()
            if not word:
                continue
            lower = word.lower()
            self._words.add(lower)
            if len(word) >= MIN_PART and not word.isupper():
                self._parts.add(lower)
        # Per lexicon, bounded: the same words recur across scripts.
        self.is_word = lru_cache(maxsize=65536)(self._is_word)

    @classmethod
    def from_file(cls, path=DEFAULT_WORDLIST):
        try:
            with open(path, encoding="utf-8") as handle:
                return cls(handle)
        except FileNotFoundError:
            raise LexiconUnavailable(f"German word list {path} is missing. {INSTALL_HINT}") from None

    def __len__(self):
        return len(self._words)

    def _is_word(self, lower):
        """Whether `lower` (a lower-case word) is German: listed, or a compound of listed words."""
        return lower in self._words or self._is_compound(lower, MAX_PARTS)

    def _is_head(self, head):
        parts = self._parts
        if head in parts or head + "e" in parts:
            return True
        return any(head.endswith(link) and head[: -len(link)] in parts for link in LINKS)

    def _is_compound(self, word, parts_left):
        if parts_left < 2:
            return False
        for cut in range(MIN_PART, len(word) - MIN_PART + 1):
            tail = word[cut:]
            if (tail in self._parts or self._is_compound(tail, parts_left - 1)) and self._is_head(word[:cut]):
                return True
        return False


_lock = threading.Lock()
_default = None


def default_lexicon():
    """The process-wide lexicon, read from disk once on first use."""
    global _default
    if _default is None:
        with _lock:
            if _default is None:
                _default = GermanLexicon.from_file(DEFAULT_WORDLIST)
    return _default
