from console.errors import ApiError, Conflict


class DocumentTooLarge(ApiError):
    status, code = 413, "document_too_large"
    message = "The document is too large."


class UnsupportedDocumentType(ApiError):
    status, code = 415, "unsupported_document_type"
    message = "Upload plain text (.txt), Markdown (.md) or PDF (.pdf)."


class UnreadableDocument(ApiError):
    status, code = 422, "unreadable_document"
    message = "The document could not be read."


class DocumentTooComplex(ApiError):
    status, code = 422, "document_too_complex"
    message = "The document is too complex to be read within the limits."


class KnowledgeLimitReached(Conflict):
    code = "knowledge_limit_reached"
    message = "The tenant's knowledge is full: delete documents first."
