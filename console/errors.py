"""One error hierarchy and one mapping to the contract's JSON error shape.

Every error on the API paths is `{"error": {"code", "message", "details"}}`
(CONTRACT §2). Services raise `ApiError` subclasses; DRF exceptions, Django's own
`Http404`/`PermissionDenied` and unexpected exceptions are mapped here too, so the
DRF exception handler and the JSON error middleware share one translation.
"""
import logging

from django import db
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf

logger = logging.getLogger("console.errors")


class ApiError(Exception):
    """Base of every error the project raises on purpose."""

    status = 400
    code = "bad_request"
    message = "The request could not be processed."

    def __init__(self, message=None, *, details=None, headers=None):
        self.message = message or self.message
        self.details = details or {}
        self.headers = headers or {}
        super().__init__(self.message)


class ValidationFailed(ApiError):
    status, code, message = 400, "validation_error", "Some fields are invalid."

    @classmethod
    def field(cls, name, message):
        return cls(details={name: [message]})


class MalformedJson(ApiError):
    status, code, message = 400, "malformed_json", "The request body is not valid JSON."


class PayloadTooLarge(ApiError):
    status, code, message = 413, "payload_too_large", "The request body is too large."


class TenantRequired(ApiError):
    status, code = 400, "tenant_required"
    message = "No tenant selected: send the X-Tenant header or use a tenant's host name."


class Unauthenticated(ApiError):
    status, code = 401, "unauthenticated"
    message = "Missing or invalid credentials: send 'Authorization: Bearer <api key>'."


class TenantForbidden(ApiError):
    # One answer for "does not exist" and "not yours", so tenants cannot be enumerated.
    status, code = 403, "tenant_forbidden"
    message = "Your credential does not cover this tenant."


class DatabaseUnavailable(ApiError):
    # The database refused or dropped the connection, or stayed locked past the busy
    # timeout: a fault of the service, not of the request, so the client should retry.
    status, code = 503, "database_unavailable"
    message = "The database is unavailable or busy. Retry shortly (with the same Idempotency-Key, if you sent one)."

    def __init__(self, message=None, **kwargs):
        kwargs.setdefault("headers", {"Retry-After": "1"})
        super().__init__(message, **kwargs)


class NotFound(ApiError):
    status, code, message = 404, "not_found", "Not found."


class Conflict(ApiError):
    status, code, message = 409, "conflict", "The request conflicts with the current state."


class TenantLimitReached(Conflict):
    # A per-tenant cap (console.quotas): details name the limit, its setting and maximum.
    code = "tenant_limit_reached"
    message = "The tenant keeps as much of this as it may (details.limit, details.max). Delete some first."


class NumberTaken(Conflict):
    code, message = "number_taken", "This phone number is already in use."


# Status codes whose generic code is used when nothing more specific is known.
GENERIC_CODES = {
    400: "bad_request",
    401: "unauthenticated",
    402: "payment_required",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "unprocessable",
    429: "rate_limited",
    500: "internal_error",
    502: "bad_gateway",
    503: "service_unavailable",
}

GENERIC_MESSAGES = {
    400: "The request is not valid.",
    401: "Authentication is required.",
    403: "You do not have access to this resource.",
    404: "Not found.",
    405: "Method not allowed.",
    413: "The request body is too large.",
    415: "Unsupported content type.",
    500: "Internal server error. The error was logged.",
    503: "The service is temporarily unavailable.",
}


def error_response(status, code, message, details=None, headers=None):
    response = JsonResponse(
        {"error": {"code": code, "message": message, "details": details or {}}}, status=status
    )
    response.error_code = code  # for the request log line (console/request_log.py)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def generic_error_response(status, message=None):
    """An error for a status code alone (Django's own 404/405/500 pages)."""
    return error_response(
        status,
        GENERIC_CODES.get(status, "error" if status < 500 else "internal_error"),
        message or GENERIC_MESSAGES.get(status, "The request failed."),
    )


def _plain(detail):
    """DRF's ErrorDetail tree as plain strings, lists and dicts."""
    if isinstance(detail, dict):
        return {key: _plain(value) for key, value in detail.items()}
    if isinstance(detail, (list, tuple)):
        return [_plain(item) for item in detail]
    return str(detail)


def _field_details(detail):
    """Validation errors as `{field: [messages]}` (CONTRACT §2)."""
    plain = _plain(detail)
    if isinstance(plain, dict):
        return plain
    return {"non_field_errors": plain if isinstance(plain, list) else [plain]}


def response_for_exception(exc, request=None):
    """The JSON error response for `exc`, or None for exceptions we do not translate."""
    if isinstance(exc, ApiError):
        return error_response(exc.status, exc.code, exc.message, exc.details, exc.headers)
    if isinstance(exc, drf.ValidationError):
        return error_response(400, "validation_error", "Some fields are invalid.", _field_details(exc.detail))
    if isinstance(exc, drf.ParseError):
        return response_for_exception(MalformedJson(f"The request body could not be parsed: {exc.detail}"))
    if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        response = error_response(401, Unauthenticated.code, str(exc.detail) or Unauthenticated.message)
        response["WWW-Authenticate"] = 'Bearer realm="api"'
        return response
    if isinstance(exc, drf.Throttled):
        headers = {"Retry-After": str(exc.wait)} if exc.wait is not None else {}
        return error_response(429, "rate_limited", str(exc.detail), headers=headers)
    if isinstance(exc, drf.MethodNotAllowed):
        return error_response(405, "method_not_allowed", str(exc.detail))
    if isinstance(exc, drf.APIException):
        return error_response(exc.status_code, GENERIC_CODES.get(exc.status_code, "error"), str(exc.detail))
    if isinstance(exc, RequestDataTooBig):
        return response_for_exception(PayloadTooLarge())
    if isinstance(exc, (db.OperationalError, db.InterfaceError)):
        # Logged like a 500 (an operator has to know), answered as what it is.
        logger.error("Database unavailable in %s %s", getattr(request, "method", "?"),
                     getattr(request, "path", "?"), exc_info=exc)
        return response_for_exception(DatabaseUnavailable())
    if isinstance(exc, Http404):
        return generic_error_response(404)
    if isinstance(exc, DjangoPermissionDenied):
        return generic_error_response(403)
    return None


def method_not_allowed(method, path, allowed):
    """405 naming the methods that are allowed, in the message and in `Allow`."""
    allowed = [name for name in allowed if name != "OPTIONS"] + (["OPTIONS"] if "OPTIONS" in allowed else [])
    message = f"{method} is not allowed on {path}. Allowed: {', '.join(allowed)}."
    if method == "PUT" and "PATCH" in allowed:
        message += " To change fields, use PATCH with the fields to change."
    return error_response(405, "method_not_allowed", message, {"allowed": allowed},
                          headers={"Allow": ", ".join(allowed)})


def drf_exception_handler(exc, context):
    """DRF's EXCEPTION_HANDLER: everything a view raises becomes the contract shape."""
    request = context.get("request")
    view = context.get("view")
    if isinstance(exc, drf.MethodNotAllowed) and view is not None and request is not None:
        return method_not_allowed(request.method, request.path, view.allowed_methods)
    response = response_for_exception(exc, request)
    if response is not None:
        return response
    logger.exception(
        "Unhandled exception in %s %s",
        getattr(request, "method", "?"),
        getattr(request, "path", "?"),
        exc_info=exc,
    )
    return generic_error_response(500)
