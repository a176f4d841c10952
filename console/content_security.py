"""The Content-Security-Policy of the HTML pages (admin, widget demo page), through
django-csp. The policy itself is `CONTENT_SECURITY_POLICY` in settings; see
docs/operations.md."""
from csp.middleware import CSPMiddleware

from console.middleware import is_api_path


class HtmlPagesCSPMiddleware(CSPMiddleware):
    """django-csp, skipped for the JSON API: a policy there protects no page, and
    django-csp would build it for every response before looking at its exclusions."""

    def __call__(self, request):
        if is_api_path(request.path_info):
            return self.get_response(request)
        return super().__call__(request)
