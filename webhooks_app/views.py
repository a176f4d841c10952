from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response

from console.api import TenantViewSet, accepts_query, validated, validated_query
from console.openapi import errors
from console.pagination import NEXT_HELP
from webhooks_app import selectors, services
from webhooks_app.models import Endpoint
from webhooks_app.serializers import (
    DeliveryListQuerySerializer,
    DeliverySerializer,
    EndpointCreateSerializer,
    EndpointRotateSerializer,
    EndpointSerializer,
    EndpointUpdateSerializer,
    EndpointWithSecretSerializer,
)


class WebhookEndpointViewSet(mixins.RetrieveModelMixin, TenantViewSet):
    """`/v2/webhooks`: the tenant's webhook endpoints, their secrets and deliveries."""

    model = Endpoint
    serializer_class = EndpointSerializer
    lookup_value_regex = "[^/]+"

    @extend_schema(responses=inline_serializer("WebhookList", {"webhooks": EndpointSerializer(many=True)}))
    def list(self, request):
        return Response({"webhooks": EndpointSerializer(self.get_queryset(), many=True).data})

    @extend_schema(request=EndpointCreateSerializer, responses={201: EndpointWithSecretSerializer},
                   summary="Register a webhook endpoint (its secret is shown this once)",
                   extensions=errors(409))
    def create(self, request):
        data = validated(EndpointCreateSerializer, request.data)
        endpoint, secret = services.endpoint_create(tenant=request.tenant, **data)
        return Response(EndpointWithSecretSerializer(endpoint, context={"secret": secret}).data,
                        status=status.HTTP_201_CREATED)

    @extend_schema(request=EndpointUpdateSerializer, responses=EndpointSerializer)
    def partial_update(self, request, pk=None):
        endpoint = self.get_object()
        data = validated(EndpointUpdateSerializer, request.data)
        return Response(EndpointSerializer(services.endpoint_update(endpoint=endpoint, **data)).data)

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        services.endpoint_delete(endpoint=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=EndpointRotateSerializer, responses=EndpointWithSecretSerializer,
                   summary="Rotate a webhook endpoint's signing secret")
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request, pk=None):
        endpoint = self.get_object()
        data = validated(EndpointRotateSerializer, request.data)
        secret = services.endpoint_rotate_secret(endpoint=endpoint, keep_previous=data["keep_previous"])
        endpoint.refresh_from_db()
        return Response(EndpointWithSecretSerializer(endpoint, context={"secret": secret}).data)

    @accepts_query(DeliveryListQuerySerializer)
    @extend_schema(summary="List a webhook endpoint's deliveries",
                   responses=inline_serializer("WebhookDeliveryList", {
                       "deliveries": DeliverySerializer(many=True),
                       "next": serializers.CharField(allow_null=True, help_text=NEXT_HELP),
                   }))
    @action(detail=True, methods=["get"])
    def deliveries(self, request, pk=None):
        endpoint = self.get_object()
        query = validated_query(DeliveryListQuerySerializer, request)
        deliveries, next_cursor = selectors.delivery_page(endpoint=endpoint, **query)
        return Response({"deliveries": DeliverySerializer(deliveries, many=True).data, "next": next_cursor})
