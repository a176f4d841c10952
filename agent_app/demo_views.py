"""The voice demo page (`/widget/voice-demo`): talk to the demo tenant's agent from the
browser after `make run`.

The page asks its own server for a session (the browser holds no API key): only where
AGENT_VOICE_DEMO is on (make run) and only for the demo tenant. What the open page can
spend is bounded three ways: grants per client address and per tenant in a window
(the leads' exact, cross-process limiter), at most AGENT_DEMO_MAX_MINUTES reserved
per grant, and the demo tenant's minute cap."""
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST, require_safe

from agent_app.errors import DemoSessionsLimited
from agent_app.services import agent_session_create
from agent_app.views import websocket_url
from console.demo import DEMO_SLUG
from console.errors import ApiError
from console.tenants.models import Tenant
from leads_app import ratelimit
from leads_app.access import client_address

SCRIPTS = Path(__file__).resolve().parent / "scripts"


@lru_cache(maxsize=None)
def _script(name):
    return (SCRIPTS / name).read_bytes()


@require_safe
def demo_script(request, name):
    """The page's script and its AudioWorklet, served by the app like the callback
    widget's script (no static-file setup needed for the demo)."""
    if name not in ("voice-demo.js", "pcm-worklet.js"):
        raise Http404()
    return HttpResponse(_script(name), content_type="text/javascript; charset=utf-8")


def _demo_tenant():
    tenant = Tenant.objects.filter(slug=DEMO_SLUG).first() if settings.AGENT_VOICE_DEMO else None
    if tenant is None:
        raise Http404("The voice demo is off (AGENT_VOICE_DEMO) or there is no demo tenant (make run seeds it).")
    return tenant


@require_safe
def voice_demo_page(request):
    _demo_tenant()
    response = render(request, "agent_app/voice_demo.html", {"tenant": DEMO_SLUG})
    if settings.AGENT_WS_URL:  # the WebSocket on another port or host: the page may connect there
        response._csp_update = {"connect-src": [settings.AGENT_WS_URL.rstrip("/")]}
    return response


@require_POST
def voice_demo_session(request):
    """A session for the page (CSRF-checked: only the page itself can ask)."""
    try:
        tenant = _demo_tenant()
        _count_grant(request, tenant)
        session, token = agent_session_create(tenant=tenant, max_minutes=settings.AGENT_DEMO_MAX_MINUTES)
    except ApiError as exc:
        response = JsonResponse({"error": {"code": exc.code, "message": exc.message, "details": exc.details}},
                                status=exc.status)
        for name, value in exc.headers.items():
            response[name] = value
        return response
    return JsonResponse({"sessionId": session.id, "callId": session.call_id, "url": websocket_url(request, token)},
                        status=201)


def _count_grant(request, tenant):
    """One grant counted for the client's address (as the public leads count it,
    LEADS_TRUSTED_PROXIES included) and then for the tenant, in fixed windows of
    AGENT_DEMO_RATE_WINDOW_SEC; 429 `rate_limited` with Retry-After past either limit.
    A client refused by its own limit uses up nothing of the tenant's."""
    window = settings.AGENT_DEMO_RATE_WINDOW_SEC
    limits = [
        (f"voice-demo:{tenant.pk}:{client_address(request)}", settings.AGENT_DEMO_SESSIONS_PER_CLIENT, True),
        (f"voice-demo:{tenant.pk}", settings.AGENT_DEMO_SESSIONS_PER_TENANT, False),
    ]
    for bucket, limit, per_client in limits:
        retry_after = ratelimit.hit(bucket, limit=limit, window=window)
        if retry_after is not None:
            raise DemoSessionsLimited(retry_after, per_client=per_client)
