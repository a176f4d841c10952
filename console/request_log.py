"""One JSON line per request, and every other log line as JSON too.

`RequestLogMiddleware` (outermost) gives every request an id, returns it in
`X-Request-Id`, and logs one line when the response leaves: request id, method,
route, path, status, duration, tenant and, for errors, their code. It logs no header,
no query string and no body, so no API key, cookie, signature or personal data
reaches the log. It costs one `perf_counter` pair and one `json.dumps` per request.
"""
import functools
import json
import logging
import re
import time
import traceback
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime

import orjson

logger = logging.getLogger("console.requests")
# The id of the request being served, so that every line logged while serving it
# (an exception's traceback, a carrier's refusal) carries it too.
current_request_id = ContextVar("current_request_id", default=None)

# What a client may choose as its request id: short and harmless in a log line or header.
SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}")
NAMED_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")
# Error bodies this small are read for their code when no code is attached.
SMALL_ERROR_BODY = 4096


def request_id_of(request):
    """`X-Request-Id` when it is sane, else a new random id."""
    sent = request.META.get("HTTP_X_REQUEST_ID", "")
    if sent and SANE_REQUEST_ID.fullmatch(sent):
        return sent
    return uuid.uuid4().hex


class RequestLogMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        request.request_id = request_id_of(request)
        # Not reset when the response leaves: Django logs a server error's line after
        # the middleware returned, and it should carry the id too. The next request
        # (of this thread) sets its own.
        current_request_id.set(request.request_id)
        response = self.get_response(request)
        response["X-Request-Id"] = request.request_id
        status = response.status_code
        level = logging.ERROR if status >= 500 else logging.INFO
        if not logger.isEnabledFor(level):
            return response
        match = request.resolver_match
        tenant = getattr(request, "tenant", None)
        fields = {
            "requestId": request.request_id,
            "method": request.method,
            "route": route_label(match.route) if match is not None else None,
            "path": request.path_info,
            "status": status,
            "durationMs": round((time.perf_counter() - started) * 1000, 2),
            "tenant": tenant.slug if tenant is not None else None,
        }
        if status >= 400:
            fields["error"] = error_code_of(response)
        logger.log(level, "request", extra={"fields": fields})
        return response


@functools.lru_cache(maxsize=512)
def route_label(route):
    """A URL pattern as people write it: `v2/leads/(?P<pk>[^/]+)$` → `v2/leads/<pk>`
    (the router's patterns are regular expressions). Few routes exist, so it is cached."""
    return "/" + NAMED_GROUP.sub(r"<\1>", route).replace("^", "").replace("$", "").lstrip("/")


def error_code_of(response):
    """The `error.code` of an error response in the contract's shape, else None."""
    code = getattr(response, "error_code", None)
    if code is not None or response.streaming:
        return code
    if not response.get("Content-Type", "").startswith("application/json") or len(response.content) > SMALL_ERROR_BODY:
        return None
    try:
        error = json.loads(response.content).get("error")
    except (ValueError, AttributeError):
        return None
    return error.get("code") if isinstance(error, dict) else None


class ClientFaultAsWarning(logging.Filter):
    """Django logs a suspicious request (a filter the admin refuses, a host not allowed,
    too many fields) at ERROR with a traceback, though it answers it with a 400: the
    client's fault, not the server's. The handler of `django.security` writes it as one
    WARNING line without the traceback; the request line beside it has the status."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        record.exc_info, record.exc_text = None, None
        return True


class JsonFormatter(logging.Formatter):
    """`{"ts", "level", "logger", "message", ...}` on one line; a request line adds
    its fields, an exception its traceback as one string (`exc`)."""

    def format(self, record):
        line = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        elif current_request_id.get() is not None:
            line["requestId"] = current_request_id.get()
        if record.exc_info:
            line["exc"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        # orjson: a third of json.dumps's time, for a line written on every request.
        # json.dumps still writes what orjson refuses (an integer beyond 64 bits).
        try:
            return orjson.dumps(line, default=str).decode()
        except TypeError:
            return json.dumps(line, ensure_ascii=False, default=str, separators=(",", ":"))
