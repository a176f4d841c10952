"""Open, not tenant-bound endpoints of the service itself."""
from django.conf import settings
from django.db import DatabaseError, connection
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from console.api import OpenAPIView
from console.engines import engine_probes
from console.errors import ApiError
from console.tenants.models import Tenant


class DatabaseUnavailable(ApiError):
    status, code, message = 503, "database_unavailable", "The database cannot be reached."


# How old an engine probe's answer /health may report; the probes themselves keep
# what is costly (a test synthesis) and run once when a worker starts (console/warmup.py).
HEALTH_PROBE_MAX_AGE = 5.0


def tenant_count():
    """The number of tenants, which is also the database check: one statement, written
    out because the ORM's compilation of a COUNT costs ten times its execution."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(Tenant._meta.db_table)}")
        return cursor.fetchone()[0]


class HealthView(OpenAPIView):
    @extend_schema(summary="Service health and the speech engines usable now", responses=OpenApiTypes.OBJECT)
    def get(self, request):
        try:
            tenants = tenant_count()
        except DatabaseError:
            raise DatabaseUnavailable() from None
        statuses = engine_probes.statuses(max_age=HEALTH_PROBE_MAX_AGE)
        synthesis = [s for s in statuses if s.kind == "tts"]
        usable = next((s for s in synthesis if s.usable_now), None)
        body = {
            "ok": True,
            "service": settings.SERVICE_NAME,
            "contract": settings.CONTRACT_VERSION,
            # The voice a call would be spoken with now: engine and language.
            "usableVoiceProfile": f"{usable.id}/{usable.languages[0]}" if usable else "none",
            "tenants": tenants,
        }
        for status in synthesis:
            body[status.id] = {"engine": status.engine, "mode": status.mode, "usableNow": status.usable_now}
        return Response(body)
