"""A language model's answer, streamed in pieces, cut into sentences as they complete.

The voice agent speaks while the model streams (agent_app.mind): the first complete
sentence goes to synthesis at once, the next while the first is being spoken. A
sentence ends at `.`, `!`, `?` or `…` (closing quotes and brackets kept) followed by
white space, or at a line break — but not after the abbreviations the German
normaliser reads out ("z. B.", "Dr.", "Nr.", "ca.": speech_app.spoken), an initial
("A. Schmidt"), a day or an ordinal ("am 3. Mai", "1. Stock"), nor where the next word
starts in lower case or with a digit ("ca. 5 Minuten", "Hauptstr. 12"). A period is
decided only once the next word's first letter is there: one token later, about 30 ms
of a streaming model (`!` and `?` at once). Whatever is left at the end of the answer is its last sentence
(`flush`).

The first piece of a reply may be a clause: with `clause_first`, a comma, semicolon or
colon followed by white space also ends the first piece ("Gern," — "Ja, gerne,"), so
the caller hears the agent start after the model's first words rather than its first
whole sentence (at 30 tokens a second a sentence of ten words is a third of a second
more); what follows is cut at sentence ends only. Voice platforms chunk the same way
(a first chunk at a clause boundary); eSpeak pauses at the comma anyway."""
import re

from speech_app.spoken import ends_with_abbreviation

# A sentence mark and the white space after it, or a line break; with a clause mark
# for a reply's first piece.
_BREAK = re.compile(r"[.!?…]+[\"'»«“”„)\]]*\s+|\n\s*")
_CLAUSE_OR_BREAK = re.compile(r"[.!?…]+[\"'»«“”„)\]]*\s+|[,;:][\"'»«“”„)\]]*\s+|\n\s*")
_LAST_WORD = re.compile(r"(\S+)\.$")


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
            return False
        return True
