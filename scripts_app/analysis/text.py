"""Reading a script: variables, URLs, words, and positions in the text.

Everything works on character offsets into the original text, so a finding's
`text[offset:offset + length]` is exactly its excerpt.
"""
import re
from bisect import bisect_right

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
# Cheap necessary conditions for URL: the full pattern is only run when one holds.
NON_SPACE = re.compile(r"\S+")
URL_HINT = re.compile(r"://|www\.|@|\.(?:de|com|net|org|eu|info|io|at|ch|biz|shop|online)\b", re.IGNORECASE)


def variables_of(text):
    """Variable names in order of first appearance, without duplicates."""
    if "{{" not in text:
        return []
    return list(dict.fromkeys(match.group(1) for match in VARIABLE.finditer(text)))


def blank_out(text, pattern):
    """`text` with every match of `pattern` replaced by spaces of the same length."""
    return pattern.sub(lambda match: " " * len(match.group(0)), text)


def without_variables_and_urls(text):
    """What the word rules read: variables and URLs blanked out, offsets unchanged.
    A URL is the whitespace-separated token around a hint (`://`, `www.`, `@`, a
    top-level domain) that the URL pattern finds in it."""
    if "{{" in text:
        text = blank_out(text, VARIABLE)
    hint = URL_HINT.search(text)
    if hint is None:
        return text
    # Tokens from the one with the first hint on (after a whitespace, so at a token start).
    begin = max(text.rfind(space, 0, hint.start()) for space in " \t\n\r") + 1
    pieces, done = [], 0
    for token in NON_SPACE.finditer(text, begin):
        if URL_HINT.search(token.group(0)) and URL.search(token.group(0)):
            pieces += [text[done:token.start()], " " * (token.end() - token.start())]
            done = token.end()
    return "".join(pieces) + text[done:]


# Characters around words that need no regex: `Tag,` and `(bitte)` are plain words.
EDGE_PUNCTUATION = ".,;:!?\"'()[]„“”‚‘’«»…–—-/"


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


def words_of(text):
    """[(offset, word)] of the letter runs of `text`, in order. Whitespace tokens are
    split with str methods; only tokens with inner non-letters (`E-Mail`, `geht's`)
    go through the regex."""
    words, position, find = [], 0, text.find
    for token in text.split():
        start = find(token, position)
        position = start + len(token)
        core = token.strip(EDGE_PUNCTUATION)
        if core.isalpha():
            words.append((start + token.find(core), core))
        elif core:
            words.extend((start + match.start(), match.group(0)) for match in WORD.finditer(token))
    return words


class Positions:
    """Offset → (line, column), both 1-based."""

    def __init__(self, text):
        self._line_starts = [0] + [match.end() for match in re.finditer("\n", text)]

    def line_column(self, offset):
        line = bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1
