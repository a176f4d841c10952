"""The tenant's own settings in the Console API: the audio switches (CONTRACT §4)."""
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from console.api import TenantAPIView, validated
from console.tenants import services
from console.tenants.serializers import AudioSettingsPatchSerializer, AudioSettingsSerializer, audio_settings_json


class AudioSettingsView(TenantAPIView):
    @extend_schema(summary="The tenant's audio switches", responses=AudioSettingsSerializer)
    def get(self, request):
        return Response(audio_settings_json(request.tenant))

    @extend_schema(request=AudioSettingsPatchSerializer, summary="Change the tenant's audio switches",
                   responses=AudioSettingsSerializer)
    def patch(self, request):
        data = validated(AudioSettingsPatchSerializer, request.data)
        tenant = services.tenant_audio_settings_update(
            tenant=request.tenant,
            recording_enabled=data.get("recordingEnabled"),
            transcription_enabled=data.get("transcriptionEnabled"),
        )
        return Response(audio_settings_json(tenant))
