"""Base classes of the `/v2` views."""
from rest_framework import serializers, viewsets
from rest_framework.permissions import SAFE_METHODS, AllowAny
from rest_framework.views import APIView

from console.audit.services import actor_of, audit_record, field_names, request_id_of
from console.tenants.selection import tenant_for_request


class TenantBoundMixin:
    """Authenticates, then selects the request's tenant as `request.tenant`.

    Authentication runs first, so a request without credentials answers 401 before
    anything about tenants is revealed.

    Every successful write (an unsafe method answered 2xx, not an idempotent replay)
    is recorded in the audit trail (console.audit). A view whose service records its
    own, richer entry sets `audit_writes = False`; so do views whose POST writes
    nothing (rendering, transcribing).
    """

    audit_writes = True

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        request.tenant = tenant_for_request(request)

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


class TenantAPIView(TenantLoggedMixin, TenantBoundMixin, APIView):
    pass


class TenantViewSet(TenantLoggedMixin, TenantBoundMixin, viewsets.GenericViewSet):
    """A tenant's resource: the subclass declares `model`, and every row it reads
    comes from `get_queryset()`, the request tenant's rows of that model. Subclasses
    never write their own `get_queryset` (tests/console/test_isolation_matrix.py
    checks it), so scoping cannot be forgotten in a new viewset."""

    model = None

    def get_queryset(self):
        return self.model.objects.for_tenant(self.request.tenant)

    def get_object(self):
        row = super().get_object()
        # Selected by the request's tenant, so that is its tenant: a serializer naming
        # it (a lead's `tenant`) then costs no query.
        row.tenant = self.request.tenant
        return row


class OpenAPIView(APIView):
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
# more than the list's query (90 µs for the leads' filters).
_VALID_QUERIES_KEPT = 512
_valid_queries = {}


def validated_query(serializer_class, request):
    """`validated(serializer_class, request.query_params.dict())`, for query serializers
    whose result depends on the parameters alone (no context, no database): a valid set
    of parameters is validated once, an invalid one every time (its 400 is raised as
    usual). Returns a dict of the caller's own."""
    params = request.query_params.dict()
    key = (serializer_class, tuple(sorted(params.items())))
    data = _valid_queries.get(key)
    if data is None:
        data = dict(validated(serializer_class, params))
        if len(_valid_queries) >= _VALID_QUERIES_KEPT:
            _valid_queries.clear()
        _valid_queries[key] = data
    return dict(data)


class LimitField(serializers.CharField):
    """The `limit` query parameter of list endpoints (CONTRACT §5): a positive whole
    number, 50 when absent, values over 200 count as 200."""

    DEFAULT, MAXIMUM = 50, 200

    def __init__(self, **kwargs):
        # A default is returned as is, not validated: hence the number itself.
        super().__init__(required=False, default=self.DEFAULT, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        digits = value.lstrip("0")
        if not (value.isascii() and value.isdigit()) or not digits:
            raise serializers.ValidationError("Send a positive whole number, e.g. limit=50.")
        # Thousands of digits are still "more than the maximum" (int() refuses over 4,300).
        return self.MAXIMUM if len(digits) > len(str(self.MAXIMUM)) else min(int(digits), self.MAXIMUM)


class ClosedSerializer(serializers.Serializer):
    """A body of the declared fields only: an unknown field is a 400 under its name.
    With `require_one`, an empty body is a 400 that says which fields to send."""

    require_one = False

    def validate(self, attrs):
        unknown = set(self.initial_data) - set(self.fields)
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in sorted(unknown)})
        if self.require_one and not attrs:
            *others, last = self.fields
            raise serializers.ValidationError({"non_field_errors": [f"Send {', '.join(others)} and/or {last}."]})
        return super().validate(attrs)
