from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins
from rest_framework.response import Response

from console.api import TenantViewSet
from console.assistants.models import Assistant
from console.assistants.serializers import AssistantSerializer


class AssistantViewSet(mixins.RetrieveModelMixin, TenantViewSet):
    model = Assistant
    serializer_class = AssistantSerializer
    lookup_value_regex = "[^/]+"

    @extend_schema(responses=inline_serializer("AssistantList", {"assistants": AssistantSerializer(many=True)}))
    def list(self, request):
        return Response({"assistants": AssistantSerializer(self.get_queryset(), many=True).data})
