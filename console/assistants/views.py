from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.response import Response

from console.api import TenantViewSet, validated
from console.assistants import services
from console.assistants.history import version_history, version_shown
from console.assistants.serializers import (
    ASSISTANTS,
    AssistantCreateSerializer,
    AssistantPublishSerializer,
    AssistantSerializer,
    AssistantUpdateSerializer,
    AssistantVersionListSerializer,
    AssistantVersionSerializer,
)
from console.audit.services import actor_of
from console.listing import ListedMixin
from console.openapi import errors

EXAMPLE = {
    "name": "Empfang", "language": "de",
    "instructions": "Sie sind die freundliche Telefonassistenz der Praxis Sonnenschein. Antworten Sie kurz.",
    "tools": ["create_callback", "transfer_call", "end_call"],
    "transferTargets": [{"name": "Zentrale", "e164": "+4930901820"}],
    "analysis": {"summary": True, "schema": {"type": "object", "properties": {"reason": {"type": "string"}}}},
}


class AssistantViewSet(ListedMixin, mixins.RetrieveModelMixin, TenantViewSet):
    listing = ASSISTANTS
    lookup_value_regex = "[^/]+"
    not_found_message = "No assistant with this id."
    # The project's default renderers, DRF's JSON among them (not
    # console.rendering.FastJSONRenderer): an assistant holds floats (its temperature,
    # numbers in the tenant's analysis schema), which orjson may write differently
    # (1e-05 as 0.00001). A tenant has a handful of assistants.

    @extend_schema(request=AssistantCreateSerializer, responses={201: AssistantSerializer},
                   examples=[OpenApiExample("A receptionist", request_only=True, value=EXAMPLE)])
    def create(self, request):
        data = validated(AssistantCreateSerializer, request.data)
        assistant = services.assistant_create(tenant=request.tenant, data=data)
        return Response(AssistantSerializer(assistant).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=AssistantUpdateSerializer, responses=AssistantSerializer)
    def partial_update(self, request, pk=None):
        assistant = self.get_object()
        data = validated(AssistantUpdateSerializer, request.data)
        return Response(AssistantSerializer(services.assistant_update(assistant=assistant, data=data)).data)

    @extend_schema(responses={204: None}, extensions=errors(409))
    def destroy(self, request, pk=None):
        services.assistant_delete(assistant=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=AssistantPublishSerializer, responses={201: AssistantVersionSerializer},
                   extensions=errors(409), summary="Publish the assistant's draft as its next version")
    @action(detail=True, methods=["post"])
    def publish(self, request, pk=None):
        assistant = self.get_object()
        data = validated(AssistantPublishSerializer, request.data)
        version = services.assistant_publish(assistant=assistant, actor=actor_of(request), note=data["note"],
                                             force=data["force"])
        return Response(version_shown(assistant=assistant, number=version.number), status=status.HTTP_201_CREATED)

    @extend_schema(responses=AssistantVersionListSerializer, operation_id="assistants_versions_list",
                   summary="List an assistant's versions with what each changed")
    @action(detail=True, methods=["get"])
    def versions(self, request, pk=None):
        return Response(version_history(assistant=self.get_object()))

    @extend_schema(responses=AssistantVersionSerializer, extensions=errors(404), operation_id="assistants_version_retrieve",
                   summary="Get one version of an assistant")
    @action(detail=True, methods=["get"], url_path=r"versions/(?P<number>[0-9]{1,9})")
    def version(self, request, pk=None, number=None):
        shown = version_shown(assistant=self.get_object(), number=int(number))
        if shown is None:
            raise services.UnknownVersion()
        return Response(shown)

    @extend_schema(request=None, responses=AssistantSerializer, extensions=errors(400, 404),
                   summary="Restore a version into the assistant's draft")
    @action(detail=True, methods=["post"], url_path=r"versions/(?P<number>[0-9]{1,9})/restore")
    def restore(self, request, pk=None, number=None):
        # No body is needed, but one that is sent is read like every body: a broken one
        # is the contract's 400, not silently ignored.
        request.data  # noqa: B018
        assistant = services.assistant_restore(assistant=self.get_object(), number=int(number))
        return Response(AssistantSerializer(assistant).data)
