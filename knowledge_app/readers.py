"""Uploaded bytes → checked text → sections (knowledge_app/splitting.py).

Every refusal is cheap and says what to do: the size is checked before anything is
read, text must be UTF-8 without NUL or other binary control characters and
without a line longer than KNOWLEDGE_MAX_LINE_CHARS, and a PDF is read in a process
of its own (knowledge_app/pdf_extract.py) bounded in pages, characters, memory, CPU
time and wall time.
"""
import json
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

from django.conf import settings

from knowledge_app import splitting
from knowledge_app.errors import DocumentTooComplex, DocumentTooLarge, UnreadableDocument, UnsupportedDocumentType

TEXT, MARKDOWN, PDF = "text/plain", "text/markdown", "application/pdf"
CONTENT_TYPES = (TEXT, MARKDOWN, PDF)
EXTENSIONS = {".txt": TEXT, ".text": TEXT, ".md": MARKDOWN, ".markdown": MARKDOWN, ".pdf": PDF}
# What clients send for these files besides the canonical names.
ALIASES = {"text/x-markdown": MARKDOWN, "application/x-pdf": PDF}
# Say nothing about the type: the file name's extension decides.
UNTYPED = {"", "application/octet-stream", "binary/octet-stream"}

EXTRACTOR = Path(__file__).with_name("pdf_extract.py")
# C0 and C1 control characters that text never holds (tab, line and page breaks are text).
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")


def content_type_of(declared, filename):
    """The document type of an upload, from its declared type, else its extension."""
    declared = (declared or "").split(";")[0].strip().lower()
    declared = ALIASES.get(declared, declared)
    extension = os.path.splitext(filename or "")[1].lower()
    if declared == TEXT and EXTENSIONS.get(extension) == MARKDOWN:
        return MARKDOWN  # many clients send any text file as text/plain
    if declared in CONTENT_TYPES:
        return declared
    if declared in UNTYPED and extension in EXTENSIONS:
        return EXTENSIONS[extension]
    raise UnsupportedDocumentType(
        f"'{declared or extension or 'unknown'}' is not a document type this knowledge base reads. "
        "Upload plain text (.txt), Markdown (.md) or PDF (.pdf).",
        details={"contentType": declared or None, "accepted": list(CONTENT_TYPES)})


def check_size(size):
    limit = settings.KNOWLEDGE_MAX_DOCUMENT_BYTES
    if size > limit:
        raise DocumentTooLarge(f"The document has {size} bytes; at most {limit} are accepted per document.",
                               details={"bytes": size, "maxBytes": limit})


def decoded(data):
    """UTF-8 bytes (a byte order mark allowed) as text, or 422 `unreadable_document`."""
    if data.startswith(b"%PDF-"):
        raise UnreadableDocument("The file is a PDF, not text: upload it as application/pdf (.pdf).",
                                 details={"reason": "pdf_as_text"})
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableDocument(
            f"The file is not UTF-8 text (byte {exc.start} cannot be read). Save it as UTF-8 and upload it again.",
            details={"reason": "not_utf8", "offset": exc.start}) from None
    return checked_text(text)


def checked_text(text):
    """Text without NUL or other binary control characters and without an endless
    line, with line ends and Unicode normalised (NFC)."""
    if "\x00" in text:
        raise UnreadableDocument("The file holds NUL characters: it is binary, not text.",
                                 details={"reason": "binary"})
    controls = len(_CONTROL.findall(text))
    if controls:
        raise UnreadableDocument(f"The file holds {controls} control characters: it is binary, not text.",
                                 details={"reason": "binary", "controlCharacters": controls})
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    limit = settings.KNOWLEDGE_MAX_LINE_CHARS
    longest = max(map(len, text.split("\n")), default=0)
    if longest > limit:
        raise UnreadableDocument(
            f"A line has {longest} characters; at most {limit} are accepted. Break the text into lines and paragraphs.",
            details={"reason": "line_too_long", "maxLineCharacters": limit})
    chars = settings.KNOWLEDGE_MAX_DOCUMENT_CHARS
    if len(text) > chars:
        raise DocumentTooComplex(f"The document has {len(text)} characters; at most {chars} are accepted.",
                                 details={"reason": "too_much_text", "maxCharacters": chars})
    if not text.strip():
        raise UnreadableDocument("The document holds no text.", details={"reason": "no_text"})
    return text


def pdf_pages(data):
    """The texts of a PDF's pages, read by knowledge_app/pdf_extract.py in a process
    of its own, bounded in pages, characters, memory, CPU and wall time."""
    if not data.startswith(b"%PDF-"):
        raise UnreadableDocument("The file is not a PDF (it does not start with %PDF-).",
                                 details={"reason": "pdf_unreadable"})
    timeout = settings.KNOWLEDGE_PDF_TIMEOUT_SEC
    command = [sys.executable, "-I", str(EXTRACTOR), str(settings.KNOWLEDGE_PDF_MAX_PAGES),
               str(settings.KNOWLEDGE_MAX_DOCUMENT_CHARS), str(settings.KNOWLEDGE_PDF_MEMORY_MB),
               str(max(1, int(timeout)))]
    try:
        done = subprocess.run(command, input=data, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise DocumentTooComplex(f"Reading the PDF took longer than {timeout:g} s; it was stopped.",
                                 details={"reason": "timeout", "maxSeconds": timeout}) from None
    try:
        result = json.loads(done.stdout)
    except ValueError:
        # Killed by its memory or CPU limit (or crashed): nothing usable was printed.
        raise DocumentTooComplex("Reading the PDF needed more memory or processor time than allowed; it was stopped.",
                                 details={"reason": "resources"}) from None
    if "error" in result:
        reason = result["error"]
        error = UnreadableDocument if reason in ("pdf_unreadable", "pdf_encrypted") else DocumentTooComplex
        details = {"reason": reason}
        if reason == "too_many_pages":
            details["maxPages"] = settings.KNOWLEDGE_PDF_MAX_PAGES
        if reason == "too_much_text":
            details["maxCharacters"] = settings.KNOWLEDGE_MAX_DOCUMENT_CHARS
        raise error(result["message"], details=details)
    pages = [checked_pdf_text(page) for page in result["pages"]]
    if not any(page.strip() for page in pages):
        raise UnreadableDocument("The PDF holds no text (a scan?). Upload a PDF with text, or the text itself.",
                                 details={"reason": "no_text"})
    return pages


def checked_pdf_text(text):
    """A page's extracted text: NFKC (ligatures), no control characters; an endless
    line is refused as in text files."""
    text = unicodedata.normalize("NFKC", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _CONTROL.sub(" ", text)
    limit = settings.KNOWLEDGE_MAX_LINE_CHARS
    if max(map(len, text.split("\n")), default=0) > limit:
        raise UnreadableDocument(f"A line of the PDF's text has more than {limit} characters.",
                                 details={"reason": "line_too_long", "maxLineCharacters": limit})
    return text


def sections_of(content_type, data=None, text=None):
    """The sections of a document given as bytes (`data`) or as text."""
    if content_type == PDF:
        return splitting.pdf_sections(pdf_pages(data))
    text = decoded(data) if text is None else checked_text(text)
    if content_type == MARKDOWN:
        return splitting.markdown_sections(text)
    return splitting.text_sections(text)
