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
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthenticationMiddleware
from django.contrib.auth.models import AnonymousUser
from django.contrib.messages.middleware import MessageMiddleware as DjangoMessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware

from console.errors import generic_error_response, response_for_exception


def is_api_path(path):
    return any(path == prefix or path.startswith(prefix + "/") for prefix in settings.API_PATH_PREFIXES)


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


def uses_no_session(request):
    """Whether a request is on the API paths and cannot be authenticated by a login
    session: it carries an Authorization header (the API key authenticates or refuses
    it; DRF never falls back to the session then), or it goes to an open endpoint that
    reads no credentials (settings.SESSIONLESS_API_PATHS). Skipping the session for
    these changes nothing in their responses: the session is never read for them, so
    it sets no cookie and adds no `Vary: Cookie`."""
    path = request.path_info
    if not is_api_path(path):
        return False
    return "HTTP_AUTHORIZATION" in request.META or any(
        path == open_path or (open_path.endswith("/") and path.startswith(open_path))
        for open_path in settings.SESSIONLESS_API_PATHS
    )


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


def _is_json(response):
    return response.get("Content-Type", "").startswith("application/json")


def _resolver_message(request, response):
    if response.status_code == 404:
        return f"No resource at {request.method} {request.path_info}."
    if response.status_code == 405:
        return f"Method {request.method} is not allowed here."
    return None
