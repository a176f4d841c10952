"""Documents into passages, each with the path of headings it stands under (imports
no Django).

- Markdown: ATX (`## Preise`) and setext headings (a line underlined with `===` or
  `---`; a `---` after a blank line is a rule, not a heading) open sections; the heading path is the chain of headings above a passage
  (`Leistungen › Zahnreinigung`). Code fences are text, never headings. Inline markup
  is dropped (`**fett**` → `fett`, `[Anfahrt](https://…)` → `Anfahrt (https://…)`).
- Plain text: paragraphs (separated by blank lines), no headings.
- PDF: each page's text is its own section (`Seite 3`); the lines of a page are joined
  (a word broken at a line end with `-` is joined again), then cut into passages; a
  question on a line of its own or a short title after a finished sentence opens a
  section under it (`Seite 1 › Wann haben Sie geöffnet?`), so an FAQ's answers are
  passages of their own.

Within a section, paragraphs are joined into passages of at most `max_chars`
characters; a longer paragraph is cut between sentences (console.sentences, the one
German splitter: not after "Dr.", "z. B." or "3."), a longer sentence between
words, a longer word hard. Passages never span two sections.
"""
import re
from dataclasses import dataclass

from console.sentences import split_sentences

HEADING_SEPARATOR = " › "
MAX_HEADING_CHARS = 300

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`+|~~)(?=\S)(.+?)(?<=\S)\1")
_SPACES = re.compile(r"[ \t\f\v]+")


@dataclass(frozen=True)
class Passage:
    heading: str
    text: str


def _inline(text):
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(lambda m: m[1] if m[1] == m[2] else f"{m[1]} ({m[2]})", text)
    for _ in range(3):  # nested emphasis (`***fett kursiv***`)
        text = _EMPHASIS.sub(r"\2", text)
    return text


def _clean_heading(text):
    return _SPACES.sub(" ", _inline(text)).strip()[:MAX_HEADING_CHARS]


def markdown_sections(text):
    """[(heading path, [paragraphs])] of a Markdown text."""
    sections = []
    path = []  # [(level, title)]
    paragraphs, block = [], []
    fenced = False

    def end_block():
        if block:
            paragraphs.append("\n".join(block))
            block.clear()

    def end_section():
        end_block()
        if paragraphs:
            sections.append((HEADING_SEPARATOR.join(title for _, title in path)[:MAX_HEADING_CHARS], list(paragraphs)))
            paragraphs.clear()

    def open_heading(level, title):
        end_section()
        while path and path[-1][0] >= level:
            path.pop()
        if title:
            path.append((level, title))

    for line in text.split("\n"):
        if _FENCE.match(line):
            end_block()  # a code block is a paragraph of its own
            fenced = not fenced
            continue
        if fenced:
            block.append(line)
            continue
        atx = _ATX.match(line)
        if atx:
            open_heading(len(atx[1]), _clean_heading(atx[2] or ""))
            continue
        setext = _SETEXT.match(line)
        if setext and block:
            # The underlined line is the heading; lines above it without a blank line
            # between stay the paragraph they are (CommonMark would make them heading).
            title = _clean_heading(block.pop())
            open_heading(1 if setext[1][0] == "=" else 2, title)
            continue
        if not line.strip():
            end_block()
            continue
        block.append(_inline(line.strip()))
    end_section()
    return sections


def text_sections(text):
    """[("", [paragraphs])] of a plain text."""
    paragraphs = [part.strip() for part in re.split(r"\n[ \t]*\n", text)]
    paragraphs = [part for part in paragraphs if part]
    return [("", paragraphs)] if paragraphs else []


def _pdf_heading(line, previous, following):
    """Whether a PDF line is a heading of what follows (a PDF has no markup): a question
    on a line of its own ("Wann haben Sie geöffnet?", an FAQ's) or a short title without
    a final mark, after a finished sentence (or a question at the page's start) and
    before more text."""
    if not following or len(line) > 150:
        return False
    if line.endswith("?"):  # after a finished sentence, a title or at the page's start
        return previous is None or previous.endswith((".", "!", "?", ":")) or _title_like(previous)
    return (previous is not None and previous.endswith((".", "!", "?", ":")) and _title_like(line)
            and following[:1].isupper())


def _title_like(line):
    return (len(line) <= 60 and len(line.split()) <= 6 and line[:1].isupper()
            and not line.endswith((".", ",", ";", ":", "!", "?", "-")))


def pdf_sections(pages):
    """[("Seite N", [text]), ("Seite N › heading", [text]) …] of the pages' extracted
    texts: a page's lines are joined (a word broken at a line end with `-` joined again),
    and a heading line (_pdf_heading: an FAQ's question, a short title) opens a section
    of its own, so that passages end at it."""
    sections = []
    for number, page in enumerate(pages, 1):
        lines = [line.strip() for line in page.split("\n") if line.strip()]
        heading, joined = f"Seite {number}", ""
        for index, line in enumerate(lines):
            previous = lines[index - 1] if index else None
            following = lines[index + 1] if index + 1 < len(lines) else None
            if _pdf_heading(line, previous, following):
                if joined:
                    sections.append((heading, [joined]))
                heading, joined = f"Seite {number}{HEADING_SEPARATOR}{line}"[:MAX_HEADING_CHARS], ""
                continue
            if joined.endswith("-") and line[:1].islower() and len(joined) > 1 and joined[-2].isalpha():
                joined = joined[:-1] + line
            else:
                joined = f"{joined} {line}" if joined else line
        if joined:
            sections.append((heading, [joined]))
    return sections


def _pieces(paragraph, max_chars):
    """A paragraph cut into pieces of at most max_chars: between sentences, else
    between words, else hard."""
    paragraph = _SPACES.sub(" ", paragraph).strip()
    if len(paragraph) <= max_chars:
        yield paragraph
        return
    for sentence in split_sentences(paragraph):
        while len(sentence) > max_chars:
            cut = sentence.rfind(" ", 0, max_chars + 1)
            if cut <= 0:
                cut = max_chars
            yield sentence[:cut].strip()
            sentence = sentence[cut:].strip()
        if sentence:
            yield sentence


def passages(sections, max_chars):
    """The passages of `sections`, each at most `max_chars` characters."""
    result = []
    for heading, paragraphs in sections:
        current = ""
        for paragraph in paragraphs:
            for index, piece in enumerate(_pieces(paragraph, max_chars)):
                # Paragraphs stay apart; the pieces of one paragraph run on.
                joiner = " " if index else "\n\n"
                if current and len(current) + len(joiner) + len(piece) > max_chars:
                    result.append(Passage(heading, current))
                    current = ""
                current = f"{current}{joiner}{piece}" if current else piece
        if current:
            result.append(Passage(heading, current))
    return result
