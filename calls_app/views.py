"""Calls and usage in the Console API: read-only (the voice runtime writes calls)."""
from drf_spectacular.utils import extend_schema
from rest_framework import mixins
from rest_framework.response import Response

from calls_app import selectors
from calls_app.call_list import CALLS
from calls_app.models import Call
from calls_app.serializers import CallDetailSerializer, UsageSerializer
from console.api import TenantAPIView, TenantViewSet
from console.errors import NotFound
from console.listing import ListedMixin


class CallViewSet(ListedMixin, mixins.RetrieveModelMixin, TenantViewSet):
    listing = CALLS
    lookup_value_regex = "[^/]+"

    @extend_schema(responses=CallDetailSerializer)
    def retrieve(self, request, pk=None):
        try:
            call = self.get_queryset().with_transcript().select_related("analysis").get(pk=pk)
        except Call.DoesNotExist:
            raise NotFound("No call with this id.") from None
        return Response(CallDetailSerializer(call, context={"latency": selectors.call_latency(call=call)}).data)


class UsageView(TenantAPIView):
    floats_in_body = False  # the usage record holds counts, a period and a time

    @extend_schema(responses=UsageSerializer, summary="Minutes used this month against the minute cap")
    def get(self, request):
        return Response(self.get_body(request.tenant))

    def get_body(self, tenant):
        return selectors.usage_for(tenant=tenant)
