"""The gateway paths (/v1/…) and the cloud agent (/agent): thin views over the services.

All of them need `Authorization: Bearer <GATEWAY_STATIC_TOKEN>` and nothing else
opens them (docs/api.md); /v1/ready also answers probe_registry's probe credential.
"""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import validated
from gateway_app import selectors, services
from gateway_app.auth import GatewayTokenAuthentication
from gateway_app.errors import NotReady
from gateway_app.serializers import AgentRequestSerializer, LaneUsageSerializer, UsageQuerySerializer
from registry_app.probe_auth import ProbeAuthentication


class GatewayAPIView(APIView):
    authentication_classes = [GatewayTokenAuthentication]


def chat_answer_json(answer):
    return {"text": answer.result.text, **answer.as_json()}


class AgentView(GatewayAPIView):
    @extend_schema(request=AgentRequestSerializer, responses=OpenApiTypes.OBJECT,
                   summary="Answer a prompt through the registry's chat lanes, with failover")
    def post(self, request):
        data = validated(AgentRequestSerializer, request.data)
        answer = services.gateway_agent_answer(**data)
        return Response(chat_answer_json(answer))


class ReadyView(GatewayAPIView):
    authentication_classes = [ProbeAuthentication, GatewayTokenAuthentication]

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="Gateway mode, usable lanes and cooldowns")
    def get(self, request):
        readiness = selectors.gateway_readiness()
        if not readiness["ready"]:
            raise NotReady(details=readiness)
        return Response(readiness)


class UsageView(GatewayAPIView):
    @extend_schema(parameters=[UsageQuerySerializer], responses=OpenApiTypes.OBJECT,
                   summary="Usage of the gateway's lanes per UTC day")
    def get(self, request):
        query = validated(UsageQuerySerializer, request.query_params.dict())
        rows, totals = selectors.usage_between(**query)
        return Response({"from": query["first_day"], "to": query["last_day"],
                         "usage": LaneUsageSerializer(rows, many=True).data,
                         "totals": {**totals, "eur": float(totals["eur"])}})
