"""`/v2/privacy/…`: retention settings, exports (access by caller), erasures."""
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import status
from rest_framework.response import Response

from console.api import TenantAPIView, accepts_query, validated
from console.audit.services import actor_of, request_id_of
from console.openapi import errors
from privacy_app import selectors, services
from privacy_app.errors import ErasureNotFound, ExportExpired, ExportNotFound
from privacy_app.models import Erasure, Export
from privacy_app.serializers import (
    SETTINGS_FIELDS,
    ErasureSerializer,
    ExportSerializer,
    PrivacyListQuerySerializer,
    RetentionSettingsPatchSerializer,
    RetentionSettingsSerializer,
    SubjectRequestSerializer,
    erasure_json,
    export_json,
    retention_settings_json,
)

LIMIT = OpenApiParameter("limit", OpenApiTypes.INT, description="1–200 (larger values are clamped), default 50")


def _limit(request):
    return validated(PrivacyListQuerySerializer, request.query_params.dict())["limit"]


class RetentionSettingsView(TenantAPIView):
    @extend_schema(summary="How long the tenant keeps transcripts, recording links, leads and webhook deliveries",
                   responses=RetentionSettingsSerializer)
    def get(self, request):
        return Response(retention_settings_json(selectors.retention_settings_for(tenant=request.tenant)))

    @extend_schema(request=RetentionSettingsPatchSerializer, responses=RetentionSettingsSerializer,
                   summary="Change the tenant's retention periods (days, or null for no limit)")
    def patch(self, request):
        data = validated(RetentionSettingsPatchSerializer, request.data)
        retention = services.retention_settings_update(
            tenant=request.tenant, **{SETTINGS_FIELDS[wire]: value for wire, value in data.items()})
        return Response(retention_settings_json(retention))


class ExportListView(TenantAPIView):
    audit_writes = False  # the service records the export, with its size

    @accepts_query(LIMIT)
    @extend_schema(summary="The tenant's exports, newest first",
                   responses=inline_serializer("ExportList", {"exports": ExportSerializer(many=True)}),
                   operation_id="privacy_exports_list")
    def get(self, request):
        exports = selectors.export_list(tenant=request.tenant, limit=_limit(request))
        return Response({"exports": [export_json(export, with_document=False) for export in exports]})

    @extend_schema(request=SubjectRequestSerializer, responses={201: ExportSerializer, 202: ExportSerializer},
                   summary="Everything the tenant holds about a phone number or a call (Art. 15), as one JSON document")
    def post(self, request):
        subject = validated(SubjectRequestSerializer, request.data)
        export = services.export_create(tenant=request.tenant, e164=subject.get("phone"), call_id=subject.get("callId"),
                                        actor=actor_of(request), request_id=request_id_of(request))
        ready = export.status == Export.Status.READY
        return Response(export_json(export), status=status.HTTP_201_CREATED if ready else status.HTTP_202_ACCEPTED)


class ExportDetailView(TenantAPIView):
    @extend_schema(responses=ExportSerializer, summary="One export with its document (while not expired)",
                   extensions=errors(410))
    def get(self, request, export_id):
        try:
            export = selectors.export_get(tenant=request.tenant, export_id=export_id)
        except Export.DoesNotExist:
            raise ExportNotFound() from None
        if export.expires_at <= timezone.now():
            raise ExportExpired()
        return Response(export_json(export))


class ErasureListView(TenantAPIView):
    audit_writes = False  # the service records the erasure, with its counts

    @accepts_query(LIMIT)
    @extend_schema(summary="The tenant's erasure receipts",
                   responses=inline_serializer("ErasureList", {"erasures": ErasureSerializer(many=True)}),
                   operation_id="privacy_erasures_list")
    def get(self, request):
        erasures = selectors.erasure_list(tenant=request.tenant, limit=_limit(request))
        return Response({"erasures": [erasure_json(erasure) for erasure in erasures]})

    @extend_schema(request=SubjectRequestSerializer, responses={201: ErasureSerializer},
                   summary="Erase a phone number, or one call's data, from everything of the tenant (Art. 17); "
                           "returns a receipt")
    def post(self, request):
        subject = validated(SubjectRequestSerializer, request.data)
        receipt = services.erasure_create(tenant=request.tenant, e164=subject.get("phone"),
                                          call_id=subject.get("callId"), actor=actor_of(request),
                                          request_id=request_id_of(request))
        return Response(erasure_json(receipt), status=status.HTTP_201_CREATED)


class ErasureDetailView(TenantAPIView):
    @extend_schema(responses=ErasureSerializer, summary="One erasure receipt")
    def get(self, request, erasure_id):
        try:
            return Response(erasure_json(selectors.erasure_get(tenant=request.tenant, erasure_id=erasure_id)))
        except Erasure.DoesNotExist:
            raise ErasureNotFound() from None
