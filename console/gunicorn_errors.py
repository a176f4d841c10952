"""gunicorn's own error answers in the contract's JSON shape.

gunicorn refuses some requests before Django sees them (a request line over its
`limit_request_line`, headers too large, a request that is not HTTP) and writes a small
HTML page for each (`gunicorn.util.write_error`). The contract allows no HTML error on
the API paths, and at that point gunicorn has not parsed the path (the request line was
too long to read), so every such answer is JSON: `{"error": {"code", "message",
"details"}}` with `Connection: close`, as gunicorn closes the connection after it.
`gunicorn.conf.py` installs this in each worker (`post_worker_init`)."""
import json

# gunicorn's statuses (gunicorn/workers/base.py, handle_error) and our code for each.
CODES = {
    400: "bad_request",
    403: "forbidden",
    414: "uri_too_long",
    417: "expectation_failed",
    431: "header_fields_too_large",
    500: "internal_error",
    501: "not_implemented",
}
MESSAGES = {
    400: "The request is not valid HTTP",
    403: "The request is forbidden.",
    417: "The Expect header names an expectation this server does not meet.",
    431: "The request's headers are too large or too many.",
    500: "Internal server error. The error was logged.",
    501: "The request uses a transfer coding this server does not implement.",
}
# gunicorn's message can quote the request (an invalid request line): a bounded part of it.
QUOTED_MAX = 200


def json_error(status, reason, gunicorn_message):
    """The bytes of the whole HTTP answer for one of gunicorn's refusals."""
    from django.conf import settings

    from console.middleware import uri_too_long_message

    details = {}
    if status == 414:
        message, details = uri_too_long_message(), {"maxBytes": settings.API_MAX_URI_BYTES}
    elif status == 400:
        quoted = gunicorn_message[:QUOTED_MAX] + ("…" if len(gunicorn_message) > QUOTED_MAX else "")
        message = f"{MESSAGES[400]}: {quoted}" if quoted else f"{MESSAGES[400]}."
    else:
        message = MESSAGES.get(status, "The request failed.")
    code = CODES.get(status, "error" if status < 500 else "internal_error")
    body = json.dumps({"error": {"code": code, "message": message, "details": details}},
                      ensure_ascii=True).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    return head.encode("latin-1") + body


def answer_protocol_errors_in_json():
    """Replaces gunicorn's HTML error writer in this process (a gunicorn worker)."""
    from gunicorn import util

    def write_error(sock, status_int, reason, mesg):
        util.write_nonblock(sock, json_error(status_int, reason, mesg))

    util.write_error = write_error
