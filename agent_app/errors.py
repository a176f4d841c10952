"""Errors of the voice agent's session API, its demo page and its phone carriers' webhooks (docs/api.md)."""
from console.errors import ApiError, ValidationFailed


class UnknownAssistant(ValidationFailed):
    code = "unknown_assistant"
    message = "No assistant with this id in this tenant."


class DemoSessionsLimited(ApiError):
    """The public demo page granted its sessions of the window: to this client address,
    or to everyone (the demo tenant's own limit)."""

    status, code = 429, "rate_limited"
    message = "Too many voice demo sessions; try again later."

    def __init__(self, retry_after: int, *, per_client: bool) -> None:
        whose = "from this address" if per_client else "for the demo right now"
        super().__init__(
            f"Too many voice demo sessions {whose}; try again in {retry_after} seconds.",
            details={"retryAfter": retry_after},
            headers={"Retry-After": str(retry_after)},
        )


