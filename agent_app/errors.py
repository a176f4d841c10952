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


class InvalidTwilioSignature(ApiError):
    status, code = 403, "invalid_twilio_signature"
    message = "The X-Twilio-Signature header is missing or does not sign this URL and these parameters."


class InvalidCarrierSecret(ApiError):
    status, code = 401, "unauthenticated"
    message = "Authorization: Bearer <the carrier's secret> is missing or wrong."


class CallExists(ApiError):
    status, code = 409, "call_exists"
    message = "A call with this channel id is registered already; its UUID was shown once."
