"""The spoken-text linter: a script's text and its touchpoint's `maxSeconds` in, the
analysis of CONTRACT §3 out.

Plain Python (no Django), so the API, the admin, the audio render and the benchmark
all call the same function:

    >>> analyze("Wir rufen Sie zurueck.", max_seconds=30)["findings"][0]["rule"]
    'kundensicht'

Linear in the text: one pass for words, one regex pass per pattern rule; the
lexicon is read once per process (`lexicon.default_lexicon`).
"""
from scripts_app.analysis.lexicon import GermanLexicon, LexiconUnavailable, default_lexicon
from scripts_app.analysis.rules import RULES, WORDS_PER_MINUTE
from scripts_app.analysis.text import Positions, count_words, variables_of, without_variables_and_urls, words_of

__all__ = ["analyze", "GermanLexicon", "LexiconUnavailable", "default_lexicon", "RULE_IDS"]

RULE_IDS = ("dauer", "kundensicht", "umlaute", "einwortzeile", "doppelte-kennzeichnung")


def duration_of(words):
    return round(words / WORDS_PER_MINUTE * 60, 1)


class Script:
    """A text read once for all rules."""

    def __init__(self, text, max_seconds, lexicon):
        self.text = text
        self.max_seconds = max_seconds
        self.lexicon = lexicon
        self.words = count_words(text)
        self.duration_sec = duration_of(self.words)
        # What the word rules read: variables and URLs blanked out, offsets unchanged.
        self.checked = without_variables_and_urls(text)
        self.words_checked = words_of(self.checked)
        self._positions = None

    def finding(self, rule, level, message, offset, length, suggestion=None):
        if self._positions is None:
            self._positions = Positions(self.text)
        line, column = self._positions.line_column(offset)
        return {
            "rule": rule, "level": level, "message": message,
            "line": line, "column": column, "offset": offset, "length": length,
            "excerpt": self.text[offset:offset + length], "suggestion": suggestion,
        }


def analyze(text, max_seconds=None, *, lexicon=None):
    """`{"words", "durationSec", "variables", "findings"}` of `text`; findings in
    text order. Without `max_seconds` the duration rule is not applied."""
    script = Script(text, max_seconds, lexicon or default_lexicon())
    findings = [finding for rule in RULES for finding in rule(script)]
    findings.sort(key=lambda finding: (finding["offset"], RULE_IDS.index(finding["rule"])))
    return {
        "words": script.words,
        "durationSec": script.duration_sec,
        "variables": variables_of(text),
        "findings": findings,
    }
