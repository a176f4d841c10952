"""Base classes of the `/v2` views."""
from typing import Any

from django.db import models
from django.http import Http404
from rest_framework import serializers, viewsets
from rest_framework.permissions import SAFE_METHODS, AllowAny, IsAuthenticated
from rest_framework.views import APIView

from console.audit.services import actor_of, audit_record, field_names, request_id_of
from console.errors import NotFound, ValidationFailed
from console.rendering import fast_json_renderers
from console.tenants import selection
from console.verified_reads import verified_read

# What binds a view to its tenant, defined here or by DRF only (as PostHog's team-scoped viewsets).
_BINDING = ("dispatch", "initial", "bind_tenant", "get_permissions", "check_permissions", "get_queryset")


class TenantBoundMixin:
    """Authenticates, then selects the request's tenant as `request.tenant`.

    Authentication runs first, so a request without credentials answers 401 before
    anything about tenants is revealed. No subclass opts out: one defining a method of
    `_BINDING` or dropping IsAuthenticated is refused when it is created.

    Every successful write (an unsafe method answered 2xx, not an idempotent replay)
    is recorded in the audit trail (console.audit). A view whose service records its
    own, richer entry sets `audit_writes = False`; so do views whose POST writes
    nothing (rendering, transcribing).
    """

    audit_writes = True
    # Whether the view's bodies may hold floats. One that declares they do not
    # (`floats_in_body = False`; ListedMixin derives it from the listing) is rendered by
    # the fast renderer (console/rendering.py: DRF's bytes for such bodies, through
    # orjson). The choice of renderer is the core's: feature apps only declare this.
    floats_in_body = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.floats_in_body and "renderer_classes" not in vars(cls):
            cls.renderer_classes = fast_json_renderers()
        owners = {name: next((klass.__module__ for klass in cls.__mro__ if name in vars(klass)), __name__)
                  for name in _BINDING}
        changed = [name for name, owner in owners.items()
                   if owner != __name__ and owner.partition(".")[0] not in ("rest_framework", "django")]
        if changed:
            raise TypeError(f"{cls.__qualname__} is tenant-bound: it cannot define {', '.join(changed)}")
        if not any(isinstance(permission, type) and issubclass(permission, IsAuthenticated)
                   for permission in getattr(cls, "permission_classes", [IsAuthenticated])):
            raise TypeError(f"{cls.__qualname__} is tenant-bound: its permission_classes keep IsAuthenticated")

    def dispatch(self, request, *args, **kwargs):
        # Most reads come from a key verified a moment ago: DRF's decisions are known.
        response = verified_read(self, request, args, kwargs, tenant_bound=TenantBoundMixin)
        return response if response is not None else super().dispatch(request, *args, **kwargs)

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self.bind_tenant(request)

    @staticmethod
    def bind_tenant(request):
        """The one tenant rule's choice, on DRF's path (`initial`) and the verified reads'."""
        request.tenant = selection.tenant_for_request(request)
        return request.tenant

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if (self.audit_writes and request.method not in SAFE_METHODS and 200 <= response.status_code < 300
                and getattr(request, "tenant", None) is not None and not response.has_header("Idempotent-Replayed")):
            _audit_write(request, response, kwargs)
        return response


def _audit_write(request, response, url_kwargs):
    """`PATCH /v2/leads/{pk}` with the object's id (from the URL, else the answer's `id`)."""
    values = {str(value): name for name, value in url_kwargs.items()}
    path = "/".join(f"{{{values[part]}}}" if part in values else part for part in request.path.split("/"))
    body = getattr(response, "data", None)
    object_id = next(iter(url_kwargs.values()), "") or (body.get("id", "") if isinstance(body, dict) else "")
    audit_record(
        actor=actor_of(request), action=f"{request.method} {path}", tenant=request.tenant, object_id=object_id,
        request_id=request_id_of(request),
        details={"status": response.status_code, "fields": field_names(getattr(request, "data", None))},
    )


class TenantLoggedMixin:
    """Names the request's tenant in the request log line (console/request_log.py):
    the tenant is set on DRF's request, the log reads Django's."""

    def finalize_response(self, request, response, *args, **kwargs):
        tenant = request.__dict__.get("tenant")
        if tenant is not None:
            request._request.tenant = tenant
        return super().finalize_response(request, response, *args, **kwargs)


def accepts_query(*parameters):
    """Declares the query parameters a handler (`get`, `post`, a viewset's `list`, …)
    accepts: serializer classes (each field a parameter) and drf-spectacular
    `OpenApiParameter`s (those in the query). A handler without it accepts none.

    The one declaration serves both: `QueryCheckedMixin` refuses every other query
    parameter, and the OpenAPI document (console/openapi.py) lists exactly these."""
    names = []
    for parameter in parameters:
        if isinstance(parameter, type) and issubclass(parameter, serializers.BaseSerializer):
            names.extend(parameter().fields)  # built once: fields may come from get_fields()
        elif getattr(parameter, "location", None) == "query":
            names.append(parameter.name)

    def declare(handler):
        handler.query_parameters = parameters
        handler.query_names = tuple(dict.fromkeys(names))
        return handler
    return declare


def handler_of(view, method):
    """The function that answers `method` on `view` (a viewset's action), or None."""
    return getattr(view, getattr(view, "action", None) or method.lower(), None)


class QueryCheckedMixin:
    """Unknown query parameters are a 400 `validation_error` naming them with the
    accepted ones, on every API view alike (`accepts_query` declares them): a typo
    (`?stauts=new`) is never ignored. Checked after authentication (401 first) and
    before anything is read; it costs no query. A method the view does not answer
    stays a 405."""

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self.check_query_parameters(request)

    def check_query_parameters(self, request):
        if request._request.META.get("QUERY_STRING") and request.method.lower() in self.http_method_names:
            handler = handler_of(self, request.method)
            if handler is not None:
                _refuse_unknown_parameters(getattr(handler, "query_names", ()), request.query_params)


class ApiView(QueryCheckedMixin, APIView):
    """The base of an API view that is neither tenant-bound nor open (own authentication)."""


class TenantAPIView(TenantLoggedMixin, TenantBoundMixin, QueryCheckedMixin, APIView):
    pass


class TenantViewSet(TenantLoggedMixin, TenantBoundMixin, QueryCheckedMixin, viewsets.GenericViewSet):
    """A tenant's resource: the subclass declares `model`, and every row it reads
    comes from `get_queryset()`, the request tenant's rows of that model. Subclasses
    cannot write their own `get_queryset` (TenantBoundMixin refuses them), so scoping
    cannot be forgotten in a new viewset."""

    model: type[models.Model] | None = None
    # The 404's message; default "No <the model's verbose name> with this id." (a model
    # whose verbose name is German for the admin names itself here in English).
    not_found_message: str | None = None

    def get_queryset(self):
        return self.model.objects.for_tenant(self.request.tenant)

    def get_object(self):
        # "No lead with this id." rather than DRF's bare "Not found.", like every resource.
        try:
            row = super().get_object()
        except Http404:
            raise NotFound(self.not_found_message or f"No {self.model._meta.verbose_name} with this id.") from None
        # Selected by the request's tenant, so that is its tenant: a serializer naming
        # it (a lead's `tenant`) then costs no query.
        row.tenant = self.request.tenant
        return row


class OpenAPIView(QueryCheckedMixin, APIView):
    """Not tenant-bound and open (CONTRACT §1): no credentials are read at all."""

    authentication_classes = []
    permission_classes = [AllowAny]


def validated(serializer_class, data):
    """The validated data of a JSON-object body, or a 400 in the contract's shape."""
    if not isinstance(data, dict):
        raise serializers.ValidationError({"non_field_errors": ["The body must be a JSON object."]})
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


# Valid query strings of list endpoints, validated once per process: the same few
# (`?limit=200`, a status filter) come again and again, and building a serializer cost
# more than the list's query (docs/performance-history.md).
_VALID_QUERIES_KEPT = 512
_valid_queries: dict[Any, Any] = {}


def _refuse_unknown_parameters(accepted, params):
    """A 400 naming each query parameter not in `accepted` (names), with the accepted
    ones: a typo (`?stauts=new`) is never ignored."""
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        hint = f"Unknown query parameter. Accepted: {', '.join(accepted) or 'none'}."
        raise ValidationFailed(
            f"Unknown query parameter{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}. "
            f"Accepted: {', '.join(accepted) or 'none'}.",
            details={name: [hint] for name in unknown},
        )


def validated_query(serializer_class, request):
    """`validated(serializer_class, request.query_params.dict())`, for query serializers
    whose result depends on the parameters alone (no context, no database): a valid set
    of parameters is validated once, an invalid one every time (its 400 is raised as
    usual). Returns a dict of the caller's own."""
    return _validated_parameters(serializer_class, request.query_params.dict())


def default_query(serializer_class):
    """What `validated_query` gives for a request without query parameters (a list's
    defaults), for a view's `list_body` (console/verified_reads.py)."""
    return _validated_parameters(serializer_class, {})


def _validated_parameters(serializer_class, params):
    key = (serializer_class, tuple(sorted(params.items())))
    data = _valid_queries.get(key)
    if data is None:
        # The view refused them already (QueryCheckedMixin); kept for callers without
        # it. The declared fields: without building a serializer, it is cached for that.
        _refuse_unknown_parameters(serializer_class._declared_fields, params)
        data = dict(validated(serializer_class, params))
        since, until = data.get("since"), data.get("until")
        if since and until and since >= until:
            raise serializers.ValidationError({"until": ["Must be later than 'since'."]})
        if len(_valid_queries) >= _VALID_QUERIES_KEPT:
            _valid_queries.clear()
        _valid_queries[key] = data
    return dict(data)
