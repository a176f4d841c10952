"""Open, not tenant-bound endpoints of the service itself."""
import re

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.http import HttpResponse
from django.utils.cache import patch_vary_headers
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from console.api import OpenAPIView
from console.engines import engine_probes
from console.errors import ApiError, DatabaseUnavailable, response_for_exception
from console.rendering import asks_for_default_json
from console.schema_types import HealthSerializer
from console.tenants.models import Tenant

# How old an engine probe's answer /health may report; the probes themselves keep
# what is costly (a test synthesis) and run once when a worker starts (console/warmup.py).
HEALTH_PROBE_MAX_AGE = 5.0


def tenant_count():
    """The number of tenants, which is also the database check: one statement, written
    out because the ORM's compilation of a COUNT costs ten times its execution."""
    database = connections[DEFAULT_DB_ALIAS]  # looked up once: each lookup finds the thread's connection
    sql = _TENANT_COUNT_SQL.get(database.vendor)
    if sql is None:
        sql = _TENANT_COUNT_SQL[database.vendor] = \
            f"SELECT COUNT(*) FROM {database.ops.quote_name(Tenant._meta.db_table)}"
    with database.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchone()[0]


_TENANT_COUNT_SQL = {}  # per database vendor


class HealthView(OpenAPIView):
    """Asked many times a second by load balancers and monitors. A GET with the usual
    Accept values is answered as a plain Django view: the same body rendered by the same
    renderer, with the headers DRF adds (Allow; Vary when several renderers could
    answer), errors in the same shape; DRF's request cycle (authentication, permission
    and throttle checks, negotiation) has nothing to decide for it. Anything else (HEAD,
    OPTIONS, another Accept or a format override, other methods) goes through DRF."""

    @extend_schema(summary="Service health and the speech engines usable now", responses=HealthSerializer)
    def get(self, request):
        return Response(health_body())

    def dispatch(self, request, *args, **kwargs):
        if request.method != "GET" or not asks_for_default_json(request, self.renderer_classes):
            return super().dispatch(request, *args, **kwargs)
        try:
            response = HttpResponse(self.renderer_classes[0]().render(health_body(), "application/json", {}),
                                    content_type=self.renderer_classes[0].media_type)
        except ApiError as error:
            response = response_for_exception(error, request)
        except Exception:  # noqa: BLE001 - unexpected: DRF's path logs and answers it as it always did
            return super().dispatch(request, *args, **kwargs)
        headers = dict(self.default_response_headers)
        vary = headers.pop("Vary", None)
        if vary is not None:
            patch_vary_headers(response, _vary_separator.split(vary))
        for name, value in headers.items():
            response[name] = value
        return response


# DRF splits the Vary value it patches in like this (rest_framework.views).
_vary_separator = re.compile(r"\s*,\s*")


def health_body():
    """The body of GET /health (docs/api.md)."""
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
    # One object per speech engine, synthesis and recognition; a reason when not usable.
    for status in statuses:
        body[status.id] = {"engine": status.engine, "mode": status.mode, "usableNow": status.usable_now}
        if status.kind == "stt":
            body[status.id]["languages"] = list(status.languages)
        if status.reason:
            body[status.id]["reason"] = status.reason
    return body
