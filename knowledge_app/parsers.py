"""The bodies of `POST /v2/knowledge`: JSON (`{title, text}`) or a multipart upload,
both read from the stream with a bound (console/parsers.py's `read_bounded`), never
through Django's unbounded file uploads: a body larger than a document may be is
refused from its Content-Length before a byte is read."""
import io

from django.conf import settings
from django.http.multipartparser import MultiPartParser as DjangoMultiPartParser
from django.http.multipartparser import MultiPartParserError
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, DataAndFiles

from console.parsers import JSONParser, content_length, read_bounded
from knowledge_app.errors import DocumentTooLarge

# The form's boundaries, headers and title beside the file.
MULTIPART_OVERHEAD = 64 * 1024


def too_large(limit, declared):
    document = settings.KNOWLEDGE_MAX_DOCUMENT_BYTES
    said = f"The request body has {declared} bytes" if declared is not None else "The request body is larger"
    return DocumentTooLarge(f"{said}; a document may have at most {document} bytes.",
                            details={"maxBytes": document})


class KnowledgeJSONParser(JSONParser):
    """JSON of a document's text: every character may be written as a six-byte
    `\\u` escape, so the body may be six times the document's limit."""

    too_large = staticmethod(too_large)

    @property
    def limit(self):
        return settings.KNOWLEDGE_MAX_DOCUMENT_BYTES * 6 + MULTIPART_OVERHEAD


class KnowledgeMultipartParser(BaseParser):
    media_type = "multipart/form-data"

    def parse(self, stream, media_type=None, parser_context=None):
        request = parser_context["request"]
        limit = settings.KNOWLEDGE_MAX_DOCUMENT_BYTES + MULTIPART_OVERHEAD
        body = read_bounded(stream, content_length(request.META), limit, too_large)
        meta = {**request.META, "CONTENT_TYPE": media_type, "CONTENT_LENGTH": str(len(body))}
        try:
            data, files = DjangoMultiPartParser(meta, io.BytesIO(body), request.upload_handlers,
                                                parser_context.get("encoding") or settings.DEFAULT_CHARSET).parse()
        except MultiPartParserError as exc:
            raise ParseError(f"The multipart form could not be read: {exc}") from None
        return DataAndFiles(data, files)
