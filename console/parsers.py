"""The one JSON reader of every request body (DRF views, the carrier webhook, the
speech uploads).

Python's `json` accepts more than can be handled or stored: nesting thousands of
levels deep ends in a RecursionError, `"\\ud800"` (a lone UTF-16 surrogate) becomes a
`str` that cannot be encoded as UTF-8 (neither SQLite nor PostgreSQL can store it),
`"\\u0000"` is a NUL character that PostgreSQL text columns refuse, `1e400` becomes
infinity. `json_loads` turns all of these into the contract's errors in one place:

- not UTF-8, not JSON, `NaN`/`Infinity`, a number out of range, or nested deeper
  than MAX_DEPTH → 400 `malformed_json`;
- a NUL character or a lone surrogate in any key or string → 400
  `validation_error` whose `details` name each such field by its path
  (`text`, `variables.firstName`, `data.text`, `phrases[2]`).

`json_text` is the same reader for JSON that a model, a lane, a client's tool call or
a tool's answer wrote (not a request body): the same checks, and `JsonRefused` (a
ValueError saying why) instead of the API's errors, so that such text is a tool
error or a lane's bad answer, never a RecursionError with a traceback.
"""
import io
import json
import math
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.http.multipartparser import MultiPartParser as DjangoMultiPartParser
from django.http.multipartparser import MultiPartParserError
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, DataAndFiles

from console.errors import MalformedJson, PayloadTooLarge, ValidationFailed

# Far deeper than any body of the API (two or three levels), far below Python's
# recursion limit.
MAX_DEPTH = 32
# Bodies with more unstorable strings than this are not worth listing in full.
MAX_REPORTED_FIELDS = 20
UNSTORABLE_MESSAGE = "Must be text without NUL characters or lone surrogates (\\u0000, \\ud800–\\udfff)."


class JsonRefused(ValueError):
    """Why a JSON text was refused (`str()` says it). `too_deep`: nested deeper than
    MAX_DEPTH; `unstorable`: path → message of each string no database can store."""

    def __init__(self, message: str, *, too_deep: bool = False, unstorable: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.too_deep = too_deep
        self.unstorable = unstorable or {}


def json_text(raw: bytes | str, *, what: str = "The text") -> object:
    """The JSON value of `raw` (bytes or str), or JsonRefused (`what` names the text in
    its message): not UTF-8, not JSON, NaN/Infinity, a number out of range, nested
    deeper than MAX_DEPTH, a NUL character or a lone surrogate in a key or string."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise JsonRefused(f"{what} is not UTF-8 text.") from None
    try:
        value = json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise JsonRefused(f"{what} nests deeper than {MAX_DEPTH} levels.", too_deep=True) from None
    except ValueError as exc:  # also the 4,300-digit limit of Python's int
        raise JsonRefused(f"{what} is not valid JSON: {exc}") from None
    problems = _check(value, what)
    if problems:
        raise JsonRefused(f"{what} holds text with NUL characters or lone surrogates ({', '.join(problems)}).",
                          unstorable=problems)
    return value


def json_loads(raw):
    """The JSON value of a request body (bytes or str), or one of the errors above."""
    try:
        return json_text(raw, what="The request body")
    except JsonRefused as exc:
        if exc.unstorable:
            raise ValidationFailed(details=exc.unstorable) from None
        raise MalformedJson(exc.message, details={"maxDepth": MAX_DEPTH} if exc.too_deep else None) from None


def _refuse_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text):
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:20]} is out of range")
    return number


def _check(value, what):
    """Walks the value once, without recursion: its depth and every string in it.
    Returns the unstorable strings' paths (JsonRefused when it nests too deep)."""
    problems = {}
    stack = [(value, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, dict):
            if depth > MAX_DEPTH:
                raise JsonRefused(f"{what} nests deeper than {MAX_DEPTH} levels.", too_deep=True)
            for key, item in node.items():
                child = f"{path}.{key}" if path else key
                if not _storable(key):
                    _note(problems, f"{path}.{escaped(key)}" if path else escaped(key))
                    continue
                stack.append((item, child, depth + 1))
        elif isinstance(node, list):
            if depth > MAX_DEPTH:
                raise JsonRefused(f"{what} nests deeper than {MAX_DEPTH} levels.", too_deep=True)
            stack.extend((item, f"{path}[{index}]", depth + 1) for index, item in enumerate(node))
        elif isinstance(node, str) and not _storable(node):
            _note(problems, path or "non_field_errors")
    return problems


def _storable(text):
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escaped(key):
    """A name that cannot be shown as it is, written with JSON escapes (ASCII only)."""
    return json.dumps(key)[1:-1]


def _note(problems, field):
    if len(problems) < MAX_REPORTED_FIELDS:
        problems[field] = [UNSTORABLE_MESSAGE]


def content_length(meta):
    try:
        return max(0, int(meta.get("CONTENT_LENGTH") or 0))
    except ValueError:
        return 0


def read_bounded(stream, declared, limit, too_large):
    """At most `limit` bytes of a body whose Content-Length is `declared`: a larger
    declaration is refused before reading, and no more than limit + 1 bytes are read.
    `too_large(limit, declared)` makes the 413 error (declared is None when the body
    turned out longer than it said)."""
    if declared > limit:
        raise too_large(limit, declared)
    data = stream.read(limit + 1) if stream is not None else b""
    if len(data) > limit:
        raise too_large(limit, None)
    return data


class JSONParser(BaseParser):
    """DRF's parser of every view (REST_FRAMEWORK's DEFAULT_PARSER_CLASSES): a body of at
    most `limit` bytes (Django's DATA_UPLOAD_MAX_MEMORY_SIZE) read through `json_loads`.

    DRF's own JSONParser reads the stream to its end, whatever its size; this one
    reads at most the limit plus one byte."""

    media_type = "application/json"

    @property
    def limit(self):
        return settings.DATA_UPLOAD_MAX_MEMORY_SIZE

    @staticmethod
    def too_large(limit, declared):
        return PayloadTooLarge(f"The request body is larger than {limit} bytes.", details={"maxBytes": limit})

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        declared = content_length(request.META) if request is not None else 0
        if self.limit is None:  # Django's limit switched off
            return json_loads(stream.read() if stream is not None else b"")
        return json_loads(read_bounded(stream, declared, self.limit, self.too_large))


class BoundedMultipartParser(BaseParser):
    """A multipart form of at most `limit` bytes, read from the stream with that bound
    (`read_bounded`: a larger Content-Length is refused before a byte is read), then
    parsed by Django's multipart parser from memory; never Django's unbounded file
    uploads. A view sets `limit` and `too_large` as for JSONParser."""

    media_type = "multipart/form-data"
    too_large = staticmethod(JSONParser.too_large)

    @property
    def limit(self) -> int:
        return settings.DATA_UPLOAD_MAX_MEMORY_SIZE

    def parse(self, stream: Any, media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> DataAndFiles:
        assert parser_context is not None  # DRF's Request always passes it
        request = parser_context["request"]
        body = read_bounded(stream, content_length(request.META), self.limit, self.too_large)
        meta = {**request.META, "CONTENT_TYPE": media_type, "CONTENT_LENGTH": str(len(body))}
        try:
            data, files = DjangoMultiPartParser(meta, io.BytesIO(body), request.upload_handlers,
                                                parser_context.get("encoding") or settings.DEFAULT_CHARSET).parse()
        except MultiPartParserError as exc:
            raise ParseError(f"The multipart form could not be read: {exc}") from None
        return DataAndFiles(data, files)
