"""The voice runtime's HTTP surface (`/voice/`): outbound requests and the carrier webhook."""
import json

from django.conf import settings
from django.http import FileResponse, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response

from calls_app import selectors, services
from calls_app.carriers import outbound_carrier
from calls_app.errors import CarrierUnavailable, RecordingNotFound
from calls_app.recordings import recording_file
from calls_app.serializers import OutboundCallRequestSerializer, OutboundCallSerializer
from console.api import OpenAPIView, TenantAPIView, accepts_query, validated
from console.idempotency.services import idempotent, windowed_key
from console.openapi import errors


class OutboundCallView(TenantAPIView):
    @extend_schema(
        request=OutboundCallRequestSerializer,
        responses={201: OutboundCallSerializer},
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=False)],
        extensions=errors(402, 404, 409),
        summary="Request an outbound call: checks the minute cap, reserves minutes, dials",
    )
    def post(self, request):
        # The reservation and the stored answer commit together; the dial follows. A
        # retry with the same key gets that answer and never dials or reserves again;
        # without a key, the same request within VOICE_CALL_DEDUP_WINDOW_SEC does too.
        tenant = request.tenant
        scope = f"voice.calls:{tenant.pk}"
        to = request.data.get("to") if isinstance(request.data, dict) else None
        implicit = windowed_key(request, scope=scope, parts=[str(tenant.pk), str(to)[:64]],
                                window_sec=settings.VOICE_CALL_DEDUP_WINDOW_SEC)
        return idempotent(request, scope=scope, handler=lambda: self._reserve(request),
                          then=lambda response: self._dial(tenant, response),
                          replay=lambda response: self._replayed(tenant, response), default_key=implicit)

    @staticmethod
    def _reserve(request):
        data = validated(OutboundCallRequestSerializer, request.data)
        call = services.call_request_outbound(
            tenant=request.tenant, carrier=outbound_carrier(), to_e164=data["to"],
            from_number=data.get("from"), lead_id=data.get("leadId") or "", assistant_id=data.get("assistant"),
        )
        return Response(OutboundCallSerializer(call).data, status=status.HTTP_201_CREATED)

    @staticmethod
    def _dial(tenant, response):
        services.call_dial(call=selectors.outbound_call_get(tenant=tenant, call_id=response.data["id"]))
        return response

    @staticmethod
    def _replayed(tenant, response):
        """A call the carrier refused answers its 502 again (its minutes were released)."""
        if selectors.call_was_refused(tenant=tenant, call_id=response.data["id"]):
            raise CarrierUnavailable()
        return response


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
        extensions=errors(401),
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


class RecordingView(OpenAPIView):
    """A call's recording behind its signed, expiring link (the link is the credential:
    the API and the admin hand out fresh ones)."""

    @accepts_query(OpenApiParameter("expires", str, OpenApiParameter.QUERY, required=True),
                   OpenApiParameter("signature", str, OpenApiParameter.QUERY, required=True))
    @extend_schema(
        responses={(200, "audio/mpeg"): OpenApiTypes.BINARY},
        extensions=errors(404),
        summary="A phone call's recording (caller and agent as two channels, MP3), by its signed link",
    )
    def get(self, request, call_id):
        audio = recording_file(call_id=call_id, expires=request.GET.get("expires"),
                               signature=request.GET.get("signature"))
        if audio is None:
            raise RecordingNotFound()
        response = FileResponse(audio, content_type="audio/mpeg")
        response["Cache-Control"] = "private, max-age=300"
        return response
