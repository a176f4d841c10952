"""calls_app's errors (docs/api.md, "Error codes"; tests/console/test_error_codes.py)."""
from console.errors import ApiError, NotFound


class CarrierUnavailable(ApiError):
    status, code = 502, "carrier_unavailable"
    message = ("The carrier could not place the call; its minutes were released. Request the call again later "
               "(with a new Idempotency-Key: this one keeps answering this refusal).")


class MinuteCapReached(ApiError):
    status, code = 402, "minute_cap_reached"
    message = ("The tenant's monthly minute cap is reached; no outbound call can be placed and no voice agent "
               "session granted until it resets.")


class InvalidSignature(ApiError):
    status, code = 401, "invalid_signature"
    message = "The X-Signature header is missing or does not match the body."


class StaleSignature(ApiError):
    # The raise names the tolerance (calls_app.signing.TOLERANCE_SECONDS).
    status, code = 401, "stale_signature"
    message = "The signature timestamp is too far away from now."


class InvalidTwilioSignature(ApiError):
    status, code = 403, "invalid_twilio_signature"
    message = "The X-Twilio-Signature header is missing or does not sign this URL and these parameters."


class InvalidCarrierSecret(ApiError):
    status, code = 401, "unauthenticated"
    message = "Authorization: Bearer <the carrier's secret> is missing or wrong."


class CallExists(ApiError):
    status, code = 409, "call_exists"
    message = "A call with this channel id is registered already; its UUID was shown once."


class UnknownCarrier(NotFound):
    code, message = "unknown_carrier", "No carrier with this id."


class UnknownNumber(NotFound):
    code, message = "unknown_number", "No tenant owns the called number; the call was not stored."


class UnknownCall(NotFound):
    code, message = "unknown_call", "No outbound call with this callId was dialled through this carrier."


class UnknownEventType(ApiError):
    # The raise names the known types (calls_app.events.EVENT_TYPES).
    status, code = 400, "unknown_event_type"
    message = "Unknown event type."


class RecordingNotFound(NotFound):
    code, message = "recording_not_found", "No recording at this link: it expired, was removed, or never existed."
