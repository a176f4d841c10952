"""Word error rate of German transcripts (jiwer), after one documented normalisation.

Before comparing, reference and hypothesis are both
- lower-cased, with ß written as ss;
- stripped of punctuation (words are runs of letters or of digits; hyphens and
  apostrophes split words);
- written with numbers spelled out, because Whisper writes digits for spoken numbers:
  a time `14:30` becomes `14 uhr 30`; a digit run that starts with 0 or is longer than
  four digits (a phone number, said digit by digit in German) becomes one word per
  digit (`0152` → `null eins fünf zwei`); any other number becomes its German words
  (num2words: `10` → `zehn`, `14` → `vierzehn`).
The test sentences write their numbers as words, as they are spoken.
"""
import re

import jiwer
from num2words import num2words

_TIME = re.compile(r"\b(\d{1,2}):(\d{2})\b")
_TOKEN = re.compile(r"\d+|[^\W\d_]+")


def normalised(text):
    text = _TIME.sub(r"\1 uhr \2", text.lower())
    words = []
    for token in _TOKEN.findall(text):
        if not token.isdigit():
            words.append(token)
        elif token.startswith("0") or len(token) > 4:
            words += [num2words(int(digit), lang="de") for digit in token]
        else:
            words += num2words(int(token), lang="de").split()
    return " ".join(words).replace("ß", "ss")


def word_error_rate(reference, hypothesis):
    return jiwer.wer(normalised(reference), normalised(hypothesis) or "<nichts>")
