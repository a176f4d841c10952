from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response

from console.api import TenantAPIView, accepts_query, validated
from console.errors import ValidationFailed
from console.openapi import errors
from scripts_app import selectors, services
from scripts_app.serializers import (
    RenderRequestSerializer,
    ScriptListSerializer,
    ScriptPutSerializer,
    ScriptWithAnalysisSerializer,
    script_data,
)
from speech_app.http import MP3_RESPONSE, AnyAcceptNegotiation, mp3_response

ANALYZE_VALUES = {"1": True, "true": True, "0": False, "false": False, "": False}


def with_analysis(script):
    return {**script_data(script), "analysis": script.analysis()}


class ScriptListView(TenantAPIView):
    @accepts_query(OpenApiParameter("analyze", OpenApiTypes.STR, enum=["0", "1"], description="1 adds `analysis`"))
    @extend_schema(
        operation_id="audio_scripts_list",
        summary="The effective scripts of every touchpoint",
        responses=ScriptListSerializer,
    )
    def get(self, request):
        raw = request.query_params.get("analyze", "0").lower()
        if raw not in ANALYZE_VALUES:
            raise ValidationFailed.field("analyze", "Use analyze=1 to include the analysis, or leave it out.")
        scripts = selectors.effective_scripts(request.tenant)
        body = {"scripts": [script_data(script) for script in scripts]}
        if ANALYZE_VALUES[raw]:
            body["analysis"] = []
            for script in scripts:
                analysis = script.analysis()
                body["analysis"].append(
                    {"id": script.touchpoint_id, "durationSec": analysis["durationSec"], "findings": analysis["findings"]}
                )
        return Response(body)


class ScriptDetailView(TenantAPIView):
    @extend_schema(summary="The effective script of a touchpoint with its analysis",
                   responses=ScriptWithAnalysisSerializer)
    def get(self, request, touchpoint_id):
        return Response(with_analysis(selectors.effective_script(request.tenant, touchpoint_id)))

    @extend_schema(summary="Create or replace the tenant's script of a touchpoint",
                   request=ScriptPutSerializer, responses=ScriptWithAnalysisSerializer)
    def put(self, request, touchpoint_id):
        selectors.known_touchpoint(touchpoint_id)  # an unknown touchpoint is a 404 whatever the body
        data = validated(ScriptPutSerializer, request.data)
        script = services.script_override_put(tenant=request.tenant, touchpoint_id=touchpoint_id, text=data["text"])
        return Response(with_analysis(script))

    @extend_schema(summary="Remove the tenant's script: the default applies again", responses={204: None})
    def delete(self, request, touchpoint_id):
        services.script_override_delete(tenant=request.tenant, touchpoint_id=touchpoint_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AudioRenderView(TenantAPIView):
    content_negotiation_class = AnyAcceptNegotiation
    audit_writes = False  # a POST that stores nothing but cached audio: not a write for the audit trail

    @extend_schema(request=RenderRequestSerializer, responses=MP3_RESPONSE,
                   summary="The effective script of a touchpoint as MP3", extensions=errors(404),
                   examples=[OpenApiExample("The greeting with a name", request_only=True, value={
                       "touchpoint": "inbound.greeting", "variables": {"companyName": "Praxis Dr. Weber"}})])
    def post(self, request):
        data = validated(RenderRequestSerializer, request.data)
        rendered, from_cache = services.script_render(tenant=request.tenant, touchpoint=data["touchpoint"],
                                                      variables=data["variables"], voice=data.get("voice"))
        response = mp3_response(rendered)
        # Whether the render cache (shared by every app server) answered: for operators.
        response["X-Render-Cache"] = "hit" if from_cache else "miss"
        return response
