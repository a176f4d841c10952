"""Calls and usage in the Console API: read-only (the voice runtime writes calls)."""
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers
from rest_framework.response import Response

from calls_app import selectors
from calls_app.call_list import calls_page
from calls_app.models import Call
from calls_app.serializers import CallDetailSerializer, CallListQuerySerializer, CallSerializer, UsageSerializer
from console.api import TenantAPIView, TenantViewSet, accepts_query, default_query, validated_query
from console.errors import NotFound
from console.pagination import NEXT_HELP
from console.rendering import fast_json_renderers


class CallViewSet(mixins.RetrieveModelMixin, TenantViewSet):
    model = Call
    serializer_class = CallSerializer
    lookup_value_regex = "[^/]+"
    renderer_classes = fast_json_renderers()  # no floats in a call

    @accepts_query(CallListQuerySerializer)
    @extend_schema(
        responses=inline_serializer("CallList", {
            "calls": CallSerializer(many=True),
            "next": serializers.CharField(allow_null=True, help_text=NEXT_HELP),
        }),
    )
    def list(self, request):
        return Response(self._page(request.tenant, validated_query(CallListQuerySerializer, request)))

    def list_body(self, tenant):
        return self._page(tenant, default_query(CallListQuerySerializer))

    @staticmethod
    def _page(tenant, query):
        calls, next_cursor = calls_page(tenant=tenant, **query)
        return {"calls": calls, "next": next_cursor}

    @extend_schema(responses=CallDetailSerializer)
    def retrieve(self, request, pk=None):
        try:
            call = self.get_queryset().with_transcript().select_related("analysis").get(pk=pk)
        except Call.DoesNotExist:
            raise NotFound("No call with this id.") from None
        return Response(CallDetailSerializer(call, context={"latency": selectors.call_latency(call=call)}).data)


class UsageView(TenantAPIView):
    renderer_classes = fast_json_renderers()  # no floats in the usage record

    @extend_schema(responses=UsageSerializer, summary="Minutes used this month against the minute cap")
    def get(self, request):
        return Response(self.get_body(request.tenant))

    def get_body(self, tenant):
        return selectors.usage_for(tenant=tenant)
