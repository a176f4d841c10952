"""Reading a script: variables, URLs, words, and positions in the text.

Everything works on character offsets into the original text, so a finding's
`text[offset:offset + length]` is exactly its excerpt.
"""
import re
from itertools import accumulate
from typing import NamedTuple

VARIABLE = re.compile(r"\{\{\s*([A-Za-z0-9_.]+)\s*\}\}")
# Spoken as a whole and never checked by the word rules: links, e-mail addresses
# and bare domain names such as `praxis-mueller.de`.
URL = re.compile(
    r"(?:https?://|www\.)\S+"
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
    r"|\b[\w-]+(?:\.[\w-]+)*\.(?:de|com|net|org|eu|info|io|at|ch|biz|shop|online)\b(?:/\S*)?",
    re.IGNORECASE,
)
# A word for the word rules: a run of letters. Hyphens split (`Rückruf-Service` is
# two words to check), digits and apostrophes end a word.
WORD = re.compile(r"[^\W\d_]+")
# Characters around words that need no regex: `Tag,` and `(bitte)` are plain words.
EDGE_PUNCTUATION = ".,;:!?\"'()[]„“”‚‘’«»…–—-/"


def variables_of(text):
    """Variable names in order of first appearance, without duplicates."""
    if "{{" not in text:
        return []
    return list(dict.fromkeys(match.group(1) for match in VARIABLE.finditer(text)))


def is_spoken(token):
    """A whitespace-separated token is spoken when it has a letter or digit (a lone
    dash is not)."""
    return token.isalnum() or any(map(str.isalnum, token))


def count_words(text):
    """Spoken words: each variable is one word, and so is each other spoken token."""
    variables = 0
    if "{{" in text:
        text, variables = VARIABLE.subn(" ", text)
    return variables + sum(1 for token in text.split() if token.isalnum() or any(map(str.isalnum, token)))


def _spaces(match):
    """As many spaces as `match` is long: blanking out keeps the offsets."""
    return " " * len(match.group(0))


def may_be_url(token):
    """A cheap necessary condition for URL.search(token): every URL has a `.`, `:` or
    `@` followed by a further character of its token (`www.x`, `https://`,
    `name@host`, `.de`). A sentence end (`verbunden.`) has none, so the URL pattern
    runs on few tokens."""
    head = token[:-1]
    return "." in head or ":" in head or "@" in head


class Reading(NamedTuple):
    """A text read once, token by token, for the word rules."""
    checked: str  # the text with variables and URLs blanked out, offsets unchanged
    words: list   # [(offset, word)] of the letter runs of `checked`, in order
    word_count: int    # count_words(text)


def read(text):
    """The Reading of `text`. A URL is a whitespace-separated token in which the URL
    pattern finds a match; it is blanked out as a whole. The words are split from the
    other tokens with str methods; only tokens with inner non-letters (`E-Mail`,
    `geht's`) go through the WORD regex.

    One pass does what would otherwise take three (counting, blanking URLs, finding
    words): in Python the loop over the tokens is what costs, not the work per token.
    The count equals count_words(text): blanking a variable out leaves the same tokens
    as count_words's replacing it by one space, and each token (a URL too) counts
    when it is spoken."""
    variables = 0
    if "{{" in text:
        text, variables = VARIABLE.subn(_spaces, text)
    tokens = text.split()
    words, urls, unspoken = [], [], 0
    position, find = 0, text.find
    for token in tokens:
        start = find(token, position)
        position = start + len(token)
        if token.isalpha():  # most tokens: a plain word, nothing to strip
            words.append((start, token))
            continue
        if may_be_url(token) and URL.search(token):
            urls.append((start, position))
            if not is_spoken(token):
                unspoken += 1
            continue
        core = token.strip(EDGE_PUNCTUATION)
        if core.isalpha():
            words.append((start + token.find(core), core))
        elif not core:  # only punctuation (a dash), never spoken
            unspoken += 1
        else:  # `E-Mail`, `10:30`, `geht's`
            if not is_spoken(token):
                unspoken += 1
            words.extend((start + match.start(), match.group(0)) for match in WORD.finditer(token))
    if urls:
        text = _blanked(text, urls)
    return Reading(text, words, variables + len(tokens) - unspoken)


def _blanked(text, spans):
    """`text` with each (start, end) span (in order, not overlapping) replaced by
    spaces of the same length."""
    pieces, kept = [], 0
    for start, end in spans:
        pieces += [text[kept:start], " " * (end - start)]
        kept = end
    return "".join(pieces) + text[kept:]


def line_starts(lines):
    """The offset of each line of `lines` (the text split at "\\n")."""
    # Each line starts one character (the "\\n") after the previous one ends.
    return list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
