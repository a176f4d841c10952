from console.errors import ApiError


class OriginForbidden(ApiError):
    status, code = 403, "origin_forbidden"
    message = "This web origin may not post leads for this tenant."


class LeadRateLimited(ApiError):
    status, code = 429, "rate_limited"
    message = "Too many requests from this address; try again later."

    def __init__(self, retry_after):
        super().__init__(
            f"Too many requests from this address; try again in {retry_after} seconds.",
            details={"retryAfter": retry_after},
            headers={"Retry-After": str(retry_after)},
        )
