"""Tool results read as data: success or failure, a lookup's passages, and the
sentences of them that answer the caller's question."""
import re

from agent_app.policy.cues import ASKS_NUMBER, IMPERATIVE, INSTRUCTIONS, NUMBER_IN, QUESTION, STOP, WORD
from console.parsers import json_text
from console.sentences import split_sentences


def tool_result(content):
    """(ok, data) of a tool message's content: JSON where it is JSON; an `ok: false` or
    an `error` is a failure."""
    try:
        data = json_text(content or "")
    except ValueError:
        return not re.match(r"\s*(?:error|fehler)\b", content or "", re.IGNORECASE), content or ""
    if isinstance(data, dict) and (data.get("ok") is False or ("error" in data and data.get("ok") is not True)):
        return False, data
    return True, data


def passages_of(data):
    """The passages' texts in a lookup's result: `passages` (strings or objects with
    `text`) at the top or under `result`, or the whole text."""
    if isinstance(data, str):
        return [data] if data.strip() else []
    found = None
    for holder in (data, data.get("result") if isinstance(data, dict) else None):
        if isinstance(holder, dict) and isinstance(holder.get("passages"), list):
            found = holder["passages"]
            break
    if found is None and isinstance(data, list):
        found = data
    texts = []
    for passage in found or ():
        if isinstance(passage, str):
            texts.append(passage)
        elif isinstance(passage, dict) and isinstance(passage.get("text"), str):
            texts.append(passage["text"])
    return [text for text in texts if text.strip()]


def _stems(text):
    return {word[:5] for word in WORD.findall(text.lower()) if len(word) > 2 and word not in STOP}


def sentences(text):
    """The sentences of a passage (headings left out), by the one German splitter:
    "Praxis Dr. Weber" or "am 3. Dezember" are no sentence ends."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    return split_sentences(" ".join(" ".join(lines).split()))


def answer_from(passages, question, *, limit=2, max_chars=320):
    """The sentences of the passages that answer `question` best (most of its word
    stems; the better passage first; with none in common, the first sentence of the
    search's best passage: it found it by synonyms), at most `limit`; "" when none is
    left, or when a wish (not a question) shares only one of three or more stems. Never taken: sentences that speak to the assistant or tell anyone
    what to do (imperatives), and sentences with a phone number unless the caller
    asked for one — a passage or a tool's answer is data, quoted only as the answer."""
    wanted = _stems(question)
    numbers_wanted = bool(ASKS_NUMBER.search(question))
    scored = []
    for rank, passage in enumerate(passages[:3]):
        for index, sentence in enumerate(sentences(passage)):
            if INSTRUCTIONS.search(sentence) or IMPERATIVE.search(sentence):
                continue
            if not numbers_wanted and NUMBER_IN.search(sentence) and _digits_in(sentence) >= 6:
                continue
            overlap = len(wanted & _stems(sentence))
            scored.append((-overlap, rank, index, sentence))
    if not scored:
        return ""
    scored.sort()
    best = scored[0]
    if len(wanted) >= 3 and -best[0] == 1 and not QUESTION.search(question):
        # A wish, not a question, with one word of several in common: the search found
        # the passage by that word alone ("… einen Hütuf wegen meiner Bestellung" is not
        # answered by "Rezepte bestellen Sie telefonisch"): no answer, so the caller is
        # offered a callback instead.
        return ""
    if best[0] == 0:  # no word in common: the search's best passage, its first sentence left
        chosen = [min(scored, key=lambda item: (item[1], item[2]))]
    else:
        chosen = [best] + [item for item in scored[1:limit] if item[0] < 0 and item[1] == best[1]]
    chosen.sort(key=lambda item: (item[1], item[2]))
    text = " ".join(item[3] for item in chosen)
    if len(text) > max_chars:
        text = text[:max_chars].rsplit(" ", 1)[0].rstrip(",;:") + " …"
    return text


def _digits_in(text):
    return max((sum(c.isdigit() for c in found) for found in NUMBER_IN.findall(text)), default=0)

