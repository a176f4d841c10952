"""`/v2/messaging`: the tenant's SMS provider and its SMS (docs/api.md, "SMS")."""
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework.response import Response

from console.api import TenantAPIView, accepts_query, validated
from messaging_app import selectors, services
from messaging_app.serializers import (
    SETTINGS_FIELDS,
    MessagingSettingsPatchSerializer,
    MessagingSettingsSerializer,
    SmsListQuerySerializer,
    SmsSerializer,
    messaging_settings_json,
)

LIMIT = OpenApiParameter("limit", OpenApiTypes.INT, description="1–200 (larger values are clamped), default 50")


class MessagingSettingsView(TenantAPIView):
    @extend_schema(summary="The tenant's SMS provider (sipgate, twilio or its own webhook) and its templates",
                   responses=MessagingSettingsSerializer, operation_id="messaging_settings_retrieve")
    def get(self, request: Any) -> Response:
        return Response(messaging_settings_json(selectors.messaging_settings_for(tenant=request.tenant)))

    @extend_schema(request=MessagingSettingsPatchSerializer, responses=MessagingSettingsSerializer,
                   summary="Choose the SMS provider, its credentials and the templates",
                   operation_id="messaging_settings_partial_update")
    def patch(self, request: Any) -> Response:
        data = validated(MessagingSettingsPatchSerializer, request.data)
        config, secret = services.messaging_settings_update(
            tenant=request.tenant, data={SETTINGS_FIELDS[wire]: value for wire, value in data.items()})
        return Response(messaging_settings_json(config, secret=secret))


class SmsListView(TenantAPIView):
    @accepts_query(LIMIT)
    @extend_schema(summary="The tenant's SMS, newest first (sent, queued reminders, failed)",
                   responses=inline_serializer("SmsList", {"sms": SmsSerializer(many=True)}),
                   operation_id="messaging_sms_list")
    def get(self, request: Any) -> Response:
        limit = validated(SmsListQuerySerializer, request.query_params.dict())["limit"]
        return Response({"sms": [selectors.sms_json(sms) for sms in selectors.sms_list(tenant=request.tenant,
                                                                                        limit=limit)]})
