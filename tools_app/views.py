from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.response import Response

from console.api import TenantViewSet, validated
from console.openapi import errors
from tools_app import services
from tools_app.models import HttpTool
from tools_app.serializers import (
    HttpToolCreateSerializer,
    HttpToolRotateSerializer,
    HttpToolSerializer,
    HttpToolUpdateSerializer,
    HttpToolWithSecretSerializer,
)

EXAMPLE = {
    "name": "termin_pruefen", "description": "Prüft, ob ein Termin frei ist.",
    "parameters": {"type": "object", "properties": {"datum": {"type": "string", "format": "date"}},
                   "required": ["datum"]},
    "url": "https://praxis.example/api/termine", "timeoutMs": 3000,
}


class HttpToolViewSet(mixins.RetrieveModelMixin, TenantViewSet):
    """`/v2/tools`: the tenant's HTTP tools (what its assistants may call)."""

    model = HttpTool
    serializer_class = HttpToolSerializer
    lookup_value_regex = "[^/]+"
    not_found_message = "No HTTP tool with this id."

    @extend_schema(responses=inline_serializer("HttpToolList", {"tools": HttpToolSerializer(many=True)}))
    def list(self, request):
        return Response({"tools": HttpToolSerializer(self.get_queryset(), many=True).data})

    @extend_schema(request=HttpToolCreateSerializer, responses={201: HttpToolWithSecretSerializer},
                   summary="Create an HTTP tool (its secret is shown this once)", extensions=errors(409),
                   examples=[OpenApiExample("An appointment check", request_only=True, value=EXAMPLE)])
    def create(self, request):
        data = validated(HttpToolCreateSerializer, request.data)
        tool, secret = services.http_tool_create(tenant=request.tenant, data=data)
        return Response(HttpToolWithSecretSerializer(tool, context={"secret": secret}).data,
                        status=status.HTTP_201_CREATED)

    @extend_schema(request=HttpToolUpdateSerializer, responses=HttpToolSerializer, extensions=errors(409))
    def partial_update(self, request, pk=None):
        tool = self.get_object()
        data = validated(HttpToolUpdateSerializer, request.data)
        return Response(HttpToolSerializer(services.http_tool_update(tool=tool, data=data)).data)

    @extend_schema(responses={204: None}, extensions=errors(409))
    def destroy(self, request, pk=None):
        services.http_tool_delete(tool=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=HttpToolRotateSerializer, responses=HttpToolWithSecretSerializer,
                   summary="Rotate an HTTP tool's signing secret")
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request, pk=None):
        tool = self.get_object()
        data = validated(HttpToolRotateSerializer, request.data)
        tool, secret = services.http_tool_rotate_secret(tool=tool, keep_previous=data["keepPrevious"])
        return Response(HttpToolWithSecretSerializer(tool, context={"secret": secret}).data)
