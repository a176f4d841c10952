"""The spoken-text linter: a script's text and its touchpoint's `maxSeconds` in, the
analysis of CONTRACT §3 out.

Plain Python (no Django), so the API, the admin, the audio render and the benchmark
all call the same function:

    >>> analyze("Wir rufen Sie zurueck.", max_seconds=30)["findings"][0]["rule"]
    'kundensicht'

Linear in the text: one pass over the tokens (`text.read`) for the count, the URLs
and the words, then each rule looks only at the words it can flag; the lexicon is
read once per process (`lexicon.default_lexicon`).
"""
from bisect import bisect_right
from itertools import compress, count

from scripts_app.analysis.lexicon import GermanLexicon, LexiconUnavailable, default_lexicon
from scripts_app.analysis.rules import RULES, WORDS_PER_MINUTE
from scripts_app.analysis.text import line_starts, read, variables_of
from speech_app.spoken import spoken_form

__all__ = ["analyze", "GermanLexicon", "LexiconUnavailable", "default_lexicon", "RULE_IDS"]

RULE_IDS = ("dauer", "kundensicht", "umlaute", "einwortzeile", "doppelte-kennzeichnung")
# Findings at the same offset come in the order of RULE_IDS.
_RULE_RANK = {rule: rank for rank, rule in enumerate(RULE_IDS)}


def duration_of(words):
    return round(words / WORDS_PER_MINUTE * 60, 1)


class Script:
    """A text read once for all rules."""

    def __init__(self, text, max_seconds, lexicon):
        self.text = text
        self.max_seconds = max_seconds
        self.lexicon = lexicon
        reading = read(text)
        self.words = reading.word_count
        self.duration_sec = duration_of(self.words)
        # What the word rules read: variables and URLs blanked out, offsets unchanged.
        self.checked = reading.checked
        self.words_checked = reading.words
        # Three rules compare words case-insensitively: each word is lowered once here
        # (same index as in words_checked), not once per rule.
        self.lower_words = [word.lower() for _, word in self.words_checked]
        # For einwortzeile and for each finding's line and column.
        self.lines = text.split("\n")
        self.line_starts = line_starts(self.lines)

    def indices_of(self, vocabulary):
        """Indices (into words_checked) of the words whose lower case is in
        `vocabulary` (a set or dict of lower-case words), in text order. Most words are
        in no rule's vocabulary: map and compress run the lookups in C instead of a
        Python step per word and rule."""
        return compress(count(), map(vocabulary.__contains__, self.lower_words))

    def finding(self, rule, level, message, offset, length, suggestion=None):
        line = bisect_right(self.line_starts, offset)  # 1-based, as is the column
        return {
            "rule": rule, "level": level, "message": message,
            "line": line, "column": offset - self.line_starts[line - 1] + 1, "offset": offset, "length": length,
            "excerpt": self.text[offset:offset + length], "suggestion": suggestion,
        }


def analyze(text, max_seconds=None, *, lexicon=None):
    """`{"words", "durationSec", "variables", "findings", "spoken"}` of `text`;
    findings in text order, `spoken` the text as the voice will say it
    (speech_app.spoken). Without `max_seconds` the duration rule is not applied."""
    script = Script(text, max_seconds, lexicon or default_lexicon())
    findings = [finding for rule in RULES for finding in rule(script)]
    findings.sort(key=lambda finding: (finding["offset"], _RULE_RANK[finding["rule"]]))
    return {
        "words": script.words,
        "durationSec": script.duration_sec,
        "variables": variables_of(text),
        "findings": findings,
        "spoken": spoken_form(text),
    }
