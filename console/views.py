"""Open, not tenant-bound endpoints of the service itself."""
import math
import time

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from console.api import OpenAPIView
from console.engines import engine_probes, health_sections
from console.errors import ApiError, DatabaseUnavailable, response_for_exception
from console.rendering import add_view_headers, asks_for_default_json, fast_json_renderers
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


_TENANT_COUNT_SQL: dict[str, str] = {}  # per database vendor


class RecentReads:
    """What /health reads from the database (the tenant count, and the sections apps
    add: the SIP carriers' registrations) as it was at most `max_age` seconds ago.
    /health is asked many times a second by every balancer and monitor, and on
    PostgreSQL one statement cost a third of the request (a round trip to a server on
    the same cores): the database is checked, and read, at most once a second per
    process. A failed check is not kept: while the database is unreachable every
    request asks it again (and answers 503), and the first request after it is back
    answers 200."""

    def __init__(self, max_age):
        self.max_age = max_age
        self.forget()

    def __call__(self):
        now = time.monotonic()
        if now - self._read_at > self.max_age:
            # tenant_count() raises DatabaseError when the database is not reachable
            self._reads = {"tenants": tenant_count(), **{key: section() for key, section in health_sections.items()}}
            self._read_at = now
        return self._reads

    def forget(self):
        self._reads, self._read_at = {}, -math.inf


# How old the database's answers in /health (and so its check) may be, in seconds.
HEALTH_DATABASE_MAX_AGE = 1.0
recent_reads = RecentReads(HEALTH_DATABASE_MAX_AGE)


class HealthView(OpenAPIView):
    """Asked many times a second by load balancers and monitors. A GET with the usual
    Accept values is answered as a plain Django view: the same body rendered by the same
    renderer, with the headers DRF adds (Allow; Vary when several renderers could
    answer), errors in the same shape; DRF's request cycle (authentication, permission
    and throttle checks, negotiation) has nothing to decide for it. Anything else (HEAD,
    OPTIONS, another Accept, a query string, other methods) goes through DRF."""
    renderer_classes = fast_json_renderers()  # no floats in the body

    @extend_schema(summary="Service health and the speech engines usable now", responses=HealthSerializer)
    def get(self, request):
        return Response(health_body())

    def dispatch(self, request, *args, **kwargs):
        # A query string goes through DRF too: it checks the parameters (none accepted).
        if request.method != "GET" or request.META.get("QUERY_STRING") \
                or not asks_for_default_json(request, self.renderer_classes):
            return super().dispatch(request, *args, **kwargs)
        try:
            response = HttpResponse(self.renderer_classes[0]().render(health_body(), "application/json", {}),
                                    content_type=self.renderer_classes[0].media_type)
        except ApiError as error:
            response = response_for_exception(error, request)
        except Exception:  # noqa: BLE001 - unexpected: DRF's path logs and answers it as it always did
            return super().dispatch(request, *args, **kwargs)
        add_view_headers(self, response)
        return response


def health_body():
    """The body of GET /health (docs/api.md)."""
    try:
        reads = recent_reads()
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
        "tenants": reads["tenants"],
    }
    # One object per speech engine, synthesis and recognition; a reason when not usable.
    for status in statuses:
        body[status.id] = {"engine": status.engine, "mode": status.mode, "usableNow": status.usable_now}
        if status.kind == "stt":
            body[status.id]["languages"] = list(status.languages)
        if status.reason:
            body[status.id]["reason"] = status.reason
    for key in health_sections:
        body[key] = reads[key]
    return body
