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


class TenantAPIView(TenantBoundMixin, APIView):
    pass


class TenantViewSet(TenantBoundMixin, viewsets.GenericViewSet):
    pass


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
        digits = value.lstrip("0")
        if not (value.isascii() and value.isdigit()) or not digits:
            raise serializers.ValidationError("Send a positive whole number, e.g. limit=50.")
        # Thousands of digits are still "more than the maximum" (int() refuses over 4,300).
        return self.MAXIMUM if len(digits) > len(str(self.MAXIMUM)) else min(int(digits), self.MAXIMUM)
