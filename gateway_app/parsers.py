"""Bodies of the gateway paths: JSON, whatever the Content-Type says, and bounded.

The hub's integration paths are called by scripts and other services (model-hub-
registry §4), often as `curl -d '{"prompt": …}'`, which labels the body as form
data: so the body is read as JSON whatever its Content-Type. It is read from the
stream with a limit, so an oversized body is refused unread (413) instead of parsed.
"""
import json

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from console.errors import PayloadTooLarge

MAX_BODY_BYTES = 256 * 1024


class AnyTypeJSONParser(BaseParser):
    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else 0
        except ValueError:
            declared = 0
        if declared > MAX_BODY_BYTES:
            raise PayloadTooLarge(f"The body has {declared} bytes; at most {MAX_BODY_BYTES} are accepted here.")
        data = stream.read(MAX_BODY_BYTES + 1) if stream is not None else b""
        if len(data) > MAX_BODY_BYTES:
            raise PayloadTooLarge(f"The body is larger than {MAX_BODY_BYTES} bytes.")
        try:
            return json.loads(data)
        except ValueError as exc:  # also UnicodeDecodeError
            raise ParseError(f"JSON parse error - {exc}") from None
