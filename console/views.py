"""Open, not tenant-bound endpoints of the service itself."""
from django.conf import settings
from django.db import DatabaseError
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from console.api import OpenAPIView
from console.engines import engine_probes
from console.errors import DatabaseUnavailable
from console.schema_types import HealthSerializer
from console.tenants.models import Tenant


class HealthView(OpenAPIView):
    @extend_schema(summary="Service health and the speech engines usable now", responses=HealthSerializer)
    def get(self, request):
        try:
            tenant_count = Tenant.objects.count()
        except DatabaseError:
            raise DatabaseUnavailable() from None
        statuses = engine_probes.statuses()
        synthesis = [s for s in statuses if s.kind == "tts"]
        usable = next((s for s in synthesis if s.usable_now), None)
        body = {
            "ok": True,
            "service": settings.SERVICE_NAME,
            "contract": settings.CONTRACT_VERSION,
            # The voice a call would be spoken with now: engine and language.
            "usableVoiceProfile": f"{usable.id}/{usable.languages[0]}" if usable else "none",
            "tenants": tenant_count,
        }
        # One object per speech engine, synthesis and recognition; a reason when not usable.
        for status in statuses:
            body[status.id] = {"engine": status.engine, "mode": status.mode, "usableNow": status.usable_now}
            if status.kind == "stt":
                body[status.id]["languages"] = list(status.languages)
            if status.reason:
                body[status.id]["reason"] = status.reason
        return Response(body)
