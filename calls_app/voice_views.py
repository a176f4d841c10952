"""The voice runtime's HTTP surface (`/voice/`): outbound requests and the carrier webhook."""
import json

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response

from calls_app import services
from calls_app.carriers import outbound_carrier
from calls_app.serializers import OutboundCallRequestSerializer, OutboundCallSerializer
from console.api import OpenAPIView, TenantAPIView, validated
from console.idempotency.services import idempotent


class OutboundCallView(TenantAPIView):
    @extend_schema(
        request=OutboundCallRequestSerializer,
        responses={201: OutboundCallSerializer},
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=False)],
        summary="Request an outbound call: checks the minute cap, reserves minutes, dials",
    )
    def post(self, request):
        return idempotent(request, scope=f"voice.calls:{request.tenant.pk}", handler=lambda: self._place(request))

    def _place(self, request):
        data = validated(OutboundCallRequestSerializer, request.data)
        call = services.call_request_outbound(
            tenant=request.tenant, carrier=outbound_carrier(), to_e164=data["to"],
            from_number=data.get("from"), lead_id=data.get("leadId") or "",
        )
        services.call_dial(call=call)
        return Response(OutboundCallSerializer(call).data, status=status.HTTP_201_CREATED)


class CarrierWebhookView(OpenAPIView):
    """Authenticated by the carrier's signature alone (no API key, no session).

    POST, the carriers' hot path, is served as a plain Django view: the body is read
    raw anyway (the signature covers its exact bytes), so DRF's request wrapping,
    content negotiation and rendering only cost time. Errors still take the contract's
    shape: `ApiError`s raised here reach `console.middleware.JsonErrorMiddleware`
    (the `/voice` paths are API paths), which answers with `console.errors`' mapping,
    the same one DRF's exception handler uses. The class stays a DRF view for the
    OpenAPI schema and for the other methods (405 in the contract's shape)."""

    @extend_schema(
        request=inline_serializer("CarrierEvent", {
            "id": serializers.CharField(), "type": serializers.CharField(),
            "occurredAt": serializers.DateTimeField(), "data": serializers.DictField(),
        }),
        responses={200: inline_serializer("CarrierEventReceived", {
            "received": serializers.BooleanField(), "state": serializers.CharField()})},
        parameters=[OpenApiParameter("X-Signature", str, OpenApiParameter.HEADER, required=True)],
        summary="Signed carrier events (call.started, call.transcript, call.disclosed, call.ended)",
    )
    def post(self, request, carrier_id):
        outcome = services.event_receive(
            carrier_id=carrier_id, raw_body=request.body, signature=request.headers.get("X-Signature", "")
        )
        # The bytes DRF's JSONRenderer wrote for the same body (compact separators).
        return HttpResponse(json.dumps(outcome.body, separators=(",", ":")), status=outcome.status,
                            content_type="application/json")

    def dispatch(self, request, *args, **kwargs):
        if request.method == "POST":
            return self.post(request, *args, **kwargs)
        return super().dispatch(request, *args, **kwargs)
