"""JSON errors for everything under the API paths, whatever produced them.

DRF's exception handler covers exceptions inside DRF views. This middleware covers
the rest: the URL resolver's 404 (which Django answers with its HTML debug page when
DEBUG is on), Django's 405 from plain views, CSRF failures, disallowed hosts and
exceptions in plain views. It sits outermost so that it sees those responses last.
"""
from django.conf import settings

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


def _is_json(response):
    return response.get("Content-Type", "").startswith("application/json")


def _resolver_message(request, response):
    if response.status_code == 404:
        return f"No resource at {request.method} {request.path_info}."
    if response.status_code == 405:
        return f"Method {request.method} is not allowed here."
    return None
