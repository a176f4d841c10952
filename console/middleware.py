"""Middleware of the API paths.

`JsonErrorMiddleware`: JSON errors for everything under the API paths, whatever
produced them. DRF's exception handler covers exceptions inside DRF views. This
middleware covers the rest: the URL resolver's 404 (which Django answers with its HTML
debug page when DEBUG is on), Django's 405 from plain views, CSRF failures, disallowed
hosts and exceptions in plain views. It sits outermost so that it sees those responses
last.

`SessionMiddleware`, `AuthenticationMiddleware`, `MessageMiddleware`: Django's, left out
for API requests that can never use a login session (see `uses_no_session`); the
admin and session logins on the API keep them.
"""
import functools
import re

from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthenticationMiddleware
from django.contrib.auth.models import AnonymousUser
from django.contrib.messages.middleware import MessageMiddleware as DjangoMessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.urls import Resolver404, resolve

from console.errors import ValidationFailed, error_response, generic_error_response, response_for_exception
from console.parsers import escaped


def is_api_path(path):
    # Asked by several middleware on every request: one regular expression match.
    return _api_path_pattern(settings.API_PATH_PREFIXES).match(path) is not None


@functools.cache
def _api_path_pattern(prefixes):
    return re.compile(f"(?:{'|'.join(map(re.escape, prefixes))})(?:/|$)")


class JsonErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code >= 400 and is_api_path(request.path_info) and not _is_json(response):
            replacement = generic_error_response(response.status_code, _resolver_message(request, response))
            for header in ("Allow", "Retry-After", "WWW-Authenticate"):
                if header in response:
                    replacement[header] = response[header]
            return replacement
        return response

    def process_exception(self, request, exception):
        # Only called for exceptions raised by views; ours become their own status,
        # anything else falls through to Django (logged, then turned into JSON above).
        if is_api_path(request.path_info):
            return response_for_exception(exception, request)
        return None


def _resolves(path):
    try:
        resolve(path)
    except Resolver404:
        return False
    return True


def uses_no_session(request):
    """Whether a request is on the API paths and cannot be authenticated by a login
    session: it carries an Authorization header (the API key authenticates or refuses
    it; DRF never falls back to the session then), or it goes to an open endpoint that
    reads no credentials (settings.SESSIONLESS_API_PATHS). Skipping the session for
    these changes nothing in their responses: the session is never read for them, so
    it sets no cookie and adds no `Vary: Cookie`."""
    try:  # asked by three middleware per request
        return request.uses_no_session
    except AttributeError:
        pass
    path = request.path_info
    request.uses_no_session = is_api_path(path) and ("HTTP_AUTHORIZATION" in request.META or any(
        path == open_path or (open_path.endswith("/") and path.startswith(open_path))
        for open_path in settings.SESSIONLESS_API_PATHS
    ))
    return request.uses_no_session


class _SkippedWithoutSession:
    def __call__(self, request):
        if uses_no_session(request):
            self.skipped(request)
            return self.get_response(request)
        return super().__call__(request)

    def skipped(self, request):
        pass


class SessionMiddleware(_SkippedWithoutSession, DjangoSessionMiddleware):
    pass


class AuthenticationMiddleware(_SkippedWithoutSession, DjangoAuthenticationMiddleware):
    def skipped(self, request):
        # Nobody is logged in through a session that was not read; DRF replaces this
        # with the API key's user once it has authenticated the request.
        request.user = AnonymousUser()


class MessageMiddleware(_SkippedWithoutSession, DjangoMessageMiddleware):
    pass


def let_djangos_session_checks_see_our_middleware():
    """Django's deploy checks of the session cookie (security.W010–W015) look for its
    SessionMiddleware by its dotted path in MIDDLEWARE, so ours, a subclass under another
    name, would silently switch the cookie warnings off. Called from an AppConfig.ready()
    (console/credentials/apps.py): they find it as a subclass, like the admin's checks do."""
    from django.core.checks.security import sessions
    from django.utils.module_loading import import_string

    def session_middleware():
        return any(issubclass(import_string(path), DjangoSessionMiddleware) for path in settings.MIDDLEWARE)

    sessions._session_middleware = session_middleware


def _is_json(response):
    return response.get("Content-Type", "").startswith("application/json")


def _resolver_message(request, response):
    if response.status_code == 404:
        path = request.path_info
        if path.endswith("/") and len(path) > 1 and _resolves(path.rstrip("/")):
            return f"No resource at {path}: paths have no trailing slash, use {path.rstrip('/')}."
        return f"No resource at {request.method} {path}."
    if response.status_code == 405:
        return f"Method {request.method} is not allowed here."
    return None


class RequestLineLimitMiddleware:
    """A URL too long, or with too many query parameters, for an API request is refused
    in the contract's shape before anything reads it (docs/api.md, *Errors*):

    - the path (percent-decoded, as Django receives it) and the query string (as sent)
      together longer than `API_MAX_URI_BYTES` (4,094 bytes) → 414 `uri_too_long`;
    - more query parameters than Django's `DATA_UPLOAD_MAX_NUMBER_FIELDS` (1,000) →
      400 `too_many_query_parameters`. Django would raise `TooManyFieldsSent` when a
      view first reads `request.GET`; counted here as Django's parser counts them
      (one more than the `&`s), so no request gets that far.

    gunicorn admits request lines up to 8,190 bytes (gunicorn.conf.py), so every URL up
    to that length gets this answer from Django; a longer one gets the same 414 from
    gunicorn itself (console/serving.py). Both lengths are counted in bytes (WSGI gives
    both strings as one character per byte)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        meta = request.META
        path, query = meta.get("PATH_INFO", ""), meta.get("QUERY_STRING", "")
        if query or len(path) > settings.API_MAX_URI_BYTES:
            refusal = _request_line_refusal(path, query)
            # Other paths (the admin) keep Django's own handling of their URLs.
            if refusal is not None and is_api_path(request.path_info):
                return refusal
        return self.get_response(request)


def _request_line_refusal(path, query):
    length, limit = len(path) + (len(query) + 1 if query else 0), settings.API_MAX_URI_BYTES
    if length > limit:
        return error_response(414, "uri_too_long", uri_too_long_message(length), {"maxBytes": limit})
    max_fields = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
    # Each parameter but the first needs its "&": a shorter string cannot have too many.
    if max_fields is not None and len(query) >= max_fields and query.count("&") + 1 > max_fields:
        return error_response(
            400, "too_many_query_parameters",
            f"The URL has {query.count('&') + 1:,} query parameters; at most {max_fields:,} are accepted.",
            {"maxParameters": max_fields})
    return None


def uri_too_long_message(length=None):
    """The message of a 414, from Django (which knows the length) or from gunicorn."""
    limit = settings.API_MAX_URI_BYTES
    told = f"The URL is {length:,} bytes long" if length is not None else "The URL is too long"
    return (f"{told}; at most {limit:,} bytes of path and query string are accepted. "
            "Send fewer or shorter query parameters.")


class RefuseNulMiddleware:
    """A NUL character in the path, a query parameter or a header of an API request
    is refused before any view runs: PostgreSQL refuses NUL in text, so an id, a
    filter or a header value with one would otherwise end in a 500 as soon as it
    reaches a query. (JSON bodies are checked where they are read, console/parsers.py;
    Django decodes paths and query strings so that they never hold lone surrogates.)

    A path with NUL names no resource (404); a parameter or header with one is a 400
    `validation_error` naming it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if is_api_path(request.path_info):
            refusal = _nul_refusal(request)
            if refusal is not None:
                return refusal
        return self.get_response(request)


def _nul_refusal(request):
    if "\x00" in request.path_info:
        return generic_error_response(404, "No resource has a NUL character (\\u0000) in its path.")
    problems = {}
    # A NUL reaches a query parameter only percent-encoded; most requests skip parsing.
    if "%00" in request.META.get("QUERY_STRING", ""):
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                problems[escaped(name)] = [NUL_MESSAGE]
    # One search over all text of the environ first: a few microseconds per request.
    if "\x00" in "".join(value for value in request.META.values() if type(value) is str):
        for key, value in request.META.items():
            if (key.startswith("HTTP_") or key == "CONTENT_TYPE") and isinstance(value, str) and "\x00" in value:
                problems[_header_name(key)] = [NUL_MESSAGE]
    if problems:
        return error_response(400, ValidationFailed.code, ValidationFailed.message, problems)
    return None


NUL_MESSAGE = "Must not contain NUL characters (\\u0000)."


def _header_name(meta_key):
    return "-".join(part.capitalize() for part in meta_key.removeprefix("HTTP_").split("_"))
