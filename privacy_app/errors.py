from console.errors import ApiError, NotFound


class ExportNotFound(NotFound):
    code, message = "not_found", "No export with this id."


class ExportExpired(ApiError):
    status, code = 410, "export_expired"
    message = "This export has expired (exports are kept for 7 days); request a new one."


class ErasureNotFound(NotFound):
    code, message = "not_found", "No erasure with this id."
