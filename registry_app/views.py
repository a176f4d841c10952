"""`/v2/registry…`: a valid credential (API key of any tenant or staff session) but
no tenant (CONTRACT §1)."""
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import validated
from console.openapi import errors
from registry_app import selectors, snapshot
from registry_app.permissions import HasCredential
from registry_app.routing import render_json, route
from registry_app.serializers import (
    LaneFilterSerializer,
    RegistryVersionSerializer,
    RouteQuerySerializer,
    RouteSerializer,
)
from registry_app.validation import registry_schema


def json_bytes_response(body):
    """Pre-rendered JSON (cached per registry version), bypassing DRF's renderer."""
    return HttpResponse(body, content_type="application/json")


class RegistryAPIView(APIView):
    """The project's default authentication (API key, session), any tenant's key."""

    permission_classes = [HasCredential]


class RegistryDocumentView(RegistryAPIView):
    @extend_schema(summary="The current registry document, as loaded", extensions=errors(404), responses=OpenApiTypes.OBJECT)
    def get(self, request):
        current = selectors.current_snapshot()
        return Response(current.document, headers={"ETag": f'"{current.sha256}"',
                                                   "X-Registry-Version": str(current.number)})


class RegistrySchemaView(RegistryAPIView):
    @extend_schema(summary="The JSON Schema (draft 2020-12) of the registry document", responses=OpenApiTypes.OBJECT)
    def get(self, request):
        return Response(registry_schema())


class LaneListView(RegistryAPIView):
    @extend_schema(operation_id="registry_models_list", summary="Lanes of the current registry, filtered",
                   extensions=errors(404),
                   parameters=[LaneFilterSerializer],
                   responses=inline_serializer("RegistryModelList", {"models": serializers.ListField(
                       child=serializers.DictField())}))
    def get(self, request):
        filters = validated(LaneFilterSerializer, request.query_params.dict())
        current = snapshot.current()
        if current is None:
            return Response({"models": []})
        key = ("models", tuple(sorted(filters.items())))
        return json_bytes_response(current.derived.get_or_make(key, lambda: render_json(
            {"models": [lane.entry for lane in selectors.lanes_matching(current, **filters)]})))


class LaneDetailView(RegistryAPIView):
    @extend_schema(summary="One lane of the current registry", responses=OpenApiTypes.OBJECT)
    def get(self, request, lane_id):
        return Response(selectors.lane_by_id(lane_id).entry)


class VersionListView(RegistryAPIView):
    @extend_schema(operation_id="registry_versions_list", summary="Every load of the registry, newest first",
                   extensions=errors(404),
                   responses=inline_serializer("RegistryVersionList",
                                               {"versions": RegistryVersionSerializer(many=True)}))
    def get(self, request):
        versions = selectors.versions()
        context = {"current_number": versions[0].number if versions else None}
        return Response({"versions": RegistryVersionSerializer(versions, many=True, context=context).data})


class VersionDetailView(RegistryAPIView):
    @extend_schema(summary="One registry version with its changes against the version before",
                   responses=OpenApiTypes.OBJECT)
    def get(self, request, number):
        version = selectors.version_by_number(int(number))
        current = selectors.versions()[0]
        changes = selectors.changes_since_previous(version)
        body = RegistryVersionSerializer(version, context={"current_number": current.number}).data
        body["changes"] = changes.as_json() if changes is not None else None
        return Response(body)


class RouteView(RegistryAPIView):
    @extend_schema(summary="Usable lanes of a capability in routing order, with reasons, and the lanes left out",
                   parameters=[RouteQuerySerializer], extensions=errors(404),
                   responses=RouteSerializer)
    def get(self, request):
        query = validated(RouteQuerySerializer, request.query_params.dict())
        return json_bytes_response(route(query.pop("capability"), **query).rendered)
