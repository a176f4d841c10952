"""The bodies of a contact upload (`POST /v2/campaigns/{id}/contacts`): JSON rows, a CSV
file as the multipart field `file`, or a CSV body (`Content-Type: text/csv`), each at
most 10 MB — more than Django's global 2.5 MB, for this view alone."""
from rest_framework.parsers import BaseParser, MultiPartParser

from console.errors import PayloadTooLarge
from console.parsers import JSONParser, content_length, read_bounded

MAX_UPLOAD_BYTES = 10 * 1024 * 1024
# The multipart envelope around the file (boundaries, headers) gets some room.
MULTIPART_OVERHEAD = 64 * 1024


def upload_too_large(limit, declared):
    details = {"maxBytes": MAX_UPLOAD_BYTES}
    if declared is not None:
        details["bytes"] = declared
    return PayloadTooLarge(f"A contact upload has at most {MAX_UPLOAD_BYTES // (1024 * 1024)} MB.", details=details)


class ContactsJSONParser(JSONParser):
    limit = MAX_UPLOAD_BYTES
    too_large = staticmethod(upload_too_large)


class CsvBodyParser(BaseParser):
    media_type = "text/csv"

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        declared = content_length(request.META) if request is not None else 0
        return {"csv": read_bounded(stream, declared, MAX_UPLOAD_BYTES, upload_too_large)}


class UploadMultiPartParser(MultiPartParser):
    """DRF's multipart parser, refusing a body declared larger than the limit before
    reading it (the file itself is measured again after parsing)."""

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        declared = content_length(request.META) if request is not None else 0
        if declared > MAX_UPLOAD_BYTES + MULTIPART_OVERHEAD:
            raise upload_too_large(MAX_UPLOAD_BYTES, declared)
        return super().parse(stream, media_type, parser_context)
