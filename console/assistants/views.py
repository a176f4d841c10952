from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins
from rest_framework.response import Response

from console.api import TenantViewSet
from console.assistants.models import Assistant
from console.assistants.selectors import assistant_rows
from console.assistants.serializers import AssistantSerializer, assistant_list_data
from console.rendering import fast_json_renderers


class AssistantViewSet(mixins.RetrieveModelMixin, TenantViewSet):
    model = Assistant
    serializer_class = AssistantSerializer
    lookup_value_regex = "[^/]+"
    renderer_classes = fast_json_renderers()  # no floats in an assistant

    @extend_schema(responses=inline_serializer("AssistantList", {"assistants": AssistantSerializer(many=True)}))
    def list(self, request):
        return Response(self.list_body(request.tenant))

    def list_body(self, tenant):
        return {"assistants": assistant_list_data(assistant_rows(tenant=tenant))}
