"""Base classes of the `/v2` views."""
from rest_framework import serializers, viewsets
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from console.tenants.selection import tenant_for_request


class TenantBoundMixin:
    """Authenticates, then selects the request's tenant as `request.tenant`.

    Authentication runs first, so a request without credentials answers 401 before
    anything about tenants is revealed.
    """

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        request.tenant = tenant_for_request(request)


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


class LimitField(serializers.CharField):
    """The `limit` query parameter of list endpoints (CONTRACT §5): a positive whole
    number, 50 when absent, values over 200 count as 200."""

    DEFAULT, MAXIMUM = 50, 200

    def __init__(self, **kwargs):
        # A default is returned as is, not validated: hence the number itself.
        super().__init__(required=False, default=self.DEFAULT, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not (value.isascii() and value.isdigit()) or int(value) < 1:
            raise serializers.ValidationError("Send a positive whole number, e.g. limit=50.")
        return min(int(value), self.MAXIMUM)
