"""The bodies of `POST /v2/knowledge`: JSON (`{title, text}`) or a multipart upload,
both read from the stream with a bound (console/parsers.py's `read_bounded`), never
through Django's unbounded file uploads: a body larger than a document may be is
refused from its Content-Length before a byte is read."""
from django.conf import settings

from console.parsers import BoundedMultipartParser, JSONParser
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


class KnowledgeMultipartParser(BoundedMultipartParser):
    too_large = staticmethod(too_large)

    @property
    def limit(self):
        return settings.KNOWLEDGE_MAX_DOCUMENT_BYTES + MULTIPART_OVERHEAD
