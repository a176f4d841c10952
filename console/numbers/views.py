from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import mixins, status
from rest_framework.response import Response

from console.api import TenantViewSet, validated
from console.numbers import services
from console.numbers.models import PhoneNumber
from console.numbers.serializers import (
    PhoneNumberCreateSerializer,
    PhoneNumberSerializer,
    PhoneNumberUpdateSerializer,
)
from console.openapi import errors


class PhoneNumberViewSet(mixins.RetrieveModelMixin, TenantViewSet):
    model = PhoneNumber
    serializer_class = PhoneNumberSerializer
    lookup_value_regex = "[^/]+"

    @extend_schema(responses=inline_serializer("PhoneNumberList", {"numbers": PhoneNumberSerializer(many=True)}))
    def list(self, request):
        return Response({"numbers": PhoneNumberSerializer(self.get_queryset(), many=True).data})

    @extend_schema(request=PhoneNumberCreateSerializer, responses={201: PhoneNumberSerializer}, extensions=errors(409),
                   examples=[OpenApiExample("A number with a label", request_only=True,
                                            value={"e164": "+4930901820", "label": "Zentrale"})])
    def create(self, request):
        data = validated(PhoneNumberCreateSerializer, request.data)
        number = services.number_create(
            tenant=request.tenant, e164=data["e164"], label=data["label"], assistant_id=data["assistant"],
            assistant_version=data["assistantVersion"])
        return Response(PhoneNumberSerializer(number).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=PhoneNumberUpdateSerializer, responses=PhoneNumberSerializer, extensions=errors(409))
    def partial_update(self, request, pk=None):
        number = self.get_object()
        data = validated(PhoneNumberUpdateSerializer, request.data)
        changes = {("assistant_version" if name == "assistantVersion" else name): value for name, value in data.items()}
        number = services.number_update(number=number, **changes)
        return Response(PhoneNumberSerializer(number).data)

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        services.number_delete(number=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

