"""Reads by an API key verified a moment ago, without the decisions DRF would make
the same way every time.

Nearly every request to a tenant-bound endpoint is a GET with a key that this process
verified less than API_KEY_CACHE_SECONDS ago (console/credentials/verified.py), naming
that key's tenant in X-Tenant and asking for JSON. For such a request most steps of
DRF's `initial()` have a known answer: the first renderer, no version, permission
granted (IsAuthenticated), no throttle. Asking them, and DRF's request and template
response around them, cost a tenth or more of a read in process
(docs/performance-history.md). `verified_read` sets those answers, asks the others
where DRF's path does (the key: the authentication's `api_key_credentials`; the tenant:
`TenantBoundMixin.bind_tenant`, the one rule) and runs the rest of DRF's cycle as DRF
does: the query parameters checked, the handler, `handle_exception` for what it raises,
`finalize_response`; a plain successful Response is rendered without the template
response's machinery. The answer is DRF's (tests/console/test_verified_reads.py
compares both paths byte for byte). A GET whose body depends on the tenant alone
(`get_body`, a viewset's `list_body`; a paged list without query parameters is its
first page at the default limit) is answered from that body without building DRF's
request and response at all.

Anything else takes DRF's whole path, which decides as it always did: another method,
another or no credential, a key not verified a moment ago (its query runs there), a
tenant the rule refuses, another Accept or a format override, a view with its own
authentication, permissions, throttles or versioning. Nothing has happened by then:
looking the key and the tenant up changes nothing.
"""
from django.http import HttpResponse
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from console.credentials.authentication import ApiKeyAuthentication, api_key_credentials
from console.rendering import add_view_headers, asks_for_default_json


def verified_read(view, request, args, kwargs, *, tenant_bound):
    """DRF's response to `request` (Django's) for `view`, or None when the request is
    not a read by a key verified a moment ago of a tenant the rule admits (then DRF's
    path answers it). `tenant_bound` is the base class that dispatches here
    (console.api.TenantBoundMixin), whose `initial` is the one this answers for."""
    if request.method != "GET" or "format" in kwargs or not _default_policies(type(view), tenant_bound) \
            or not asks_for_default_json(request, view.renderer_classes):
        return None
    try:
        credentials = api_key_credentials(request, verified_only=True)
        if credentials is None:
            return None
        # As DRF's request sets them on Django's, for the tenant rule and the request log.
        request.user, request.auth = credentials
        tenant = tenant_bound.bind_tenant(request)
    except Exception:  # noqa: BLE001 - a refusal (401, 400, 403): DRF's path asks again and answers it
        return None

    direct = _direct_answer(view, request, tenant)
    if direct is not None:
        return direct
    view.args, view.kwargs = args, kwargs
    drf_request = view.initialize_request(request, *args, **kwargs)
    view.request = drf_request
    view.headers = view.default_response_headers
    # What APIView.initial() would decide (see the module's docstring).
    view.format_kwarg = None
    drf_request.accepted_renderer, drf_request.accepted_media_type = view.renderer_classes[0](), "application/json"
    drf_request.version, drf_request.versioning_scheme = None, None
    drf_request._authenticator = drf_request.authenticators[0]
    drf_request.user, drf_request.auth = credentials
    drf_request.tenant = tenant
    try:
        view.check_query_parameters(drf_request)
        # A viewset's view has its GET action set as `get` when the route maps GET.
        handler = getattr(view, "get", view.http_method_not_allowed)
        response = handler(drf_request, *args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - as APIView.dispatch: answered by the exception handler, or raised
        response = view.handle_exception(exc)
    if _is_plain_success(response):
        view.response = _rendered(view, request, response)
    else:
        view.response = view.finalize_response(drf_request, response, *args, **kwargs)
    return view.response


def _direct_answer(view, request, tenant):
    """The answer of a GET whose body depends on the tenant alone, for a request
    without query parameters (any would be refused as unknown): the view's
    `<handler>_body(tenant)` (`get_body`, a viewset's `list_body`) rendered by its
    first renderer, with DRF's headers; the handler itself returns the same body. None
    when the view has no such method, or it raised: then the handler runs, and what it
    raises is answered by DRF's exception handler."""
    action = getattr(view, "action_map", {}).get("get", "get")
    body_for = getattr(view, f"{action}_body", None)
    if body_for is None or request.META.get("QUERY_STRING"):
        return None
    try:
        body = body_for(tenant)
    except Exception:  # noqa: BLE001 - a read changed nothing: the handler runs it again, errors answered as DRF does
        return None
    response = _http_response(view.renderer_classes[0](), "application/json", body, {})
    add_view_headers(view, response)
    return response


def _is_plain_success(response):
    return type(response) is Response and 200 <= response.status_code < 300 and not response.exception \
        and response.template_name is None and response.content_type is None and not response.cookies


def _rendered(view, request, response):
    """A successful read's Response as the HttpResponse DRF would make of it: what
    `finalize_response` (a GET is not audited; the tenant, named for the request log,
    is set already) and `rendered_content` do, without the template response's machinery. The
    Response's own headers are kept."""
    drf_request = view.request
    rendered = _http_response(drf_request.accepted_renderer, drf_request.accepted_media_type, response.data,
                              view.get_renderer_context(), status=response.status_code, headers=response.items())
    add_view_headers(view, rendered)
    return rendered


def _http_response(renderer, media_type, data, context, *, status=200, headers=()):
    """`data` rendered as DRF's Response.rendered_content would: an HttpResponse with
    `headers` (a Response's own), its Content-Type the renderer's (none for no body)."""
    body = renderer.render(data, media_type, context)
    if isinstance(body, str):
        body = body.encode(renderer.charset)
    response = HttpResponse(body, status=status)
    for name, value in headers:
        response[name] = value
    if body:
        response["Content-Type"] = f"{renderer.media_type}; charset={renderer.charset}" if renderer.charset \
            else renderer.media_type
    else:
        del response["Content-Type"]
    return response


_policies_checked: dict[type, bool] = {}  # view class -> whether it has the policies verified_read assumes
# The methods whose answers verified_read gives on DRF's behalf: a view class that
# overrides any of them (beyond console.api's own `initial`) takes DRF's path.
_DECIDED_BY_DRF = ("perform_content_negotiation", "get_renderers", "determine_version", "perform_authentication",
                   "get_authenticators", "check_permissions", "get_permissions", "check_throttles", "get_throttles")


def _default_policies(view_class, tenant_bound):
    """Whether `view_class` authenticates API keys first, requires nothing more than an
    authenticated user, neither throttles nor versions, and leaves DRF's decisions to
    DRF (console.api's `initial` only adds the tenant and the query check)."""
    plain = _policies_checked.get(view_class)
    if plain is None:
        plain = _policies_checked[view_class] = (
            bool(view_class.authentication_classes) and view_class.authentication_classes[0] is ApiKeyAuthentication
            and list(view_class.permission_classes) == [IsAuthenticated]
            and not view_class.throttle_classes and view_class.versioning_class is None
            and view_class.initial is tenant_bound.initial
            and all(getattr(view_class, name) is getattr(APIView, name) for name in _DECIDED_BY_DRF)
        )
    return plain
