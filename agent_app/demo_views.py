"""The voice demo page (`/widget/voice-demo`): talk to the demo tenant's agent from the
browser after `make run`.

The page asks its own server for a session (the browser holds no API key): only where
AGENT_VOICE_DEMO is on (make run) and only for the demo tenant, whose minute cap
bounds what the open page can spend."""
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST, require_safe

from agent_app.services import agent_session_create
from agent_app.views import websocket_url
from console.demo import DEMO_SLUG
from console.errors import ApiError
from console.tenants.models import Tenant

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
        session, token = agent_session_create(tenant=_demo_tenant())
    except ApiError as exc:
        return JsonResponse({"error": {"code": exc.code, "message": exc.message, "details": exc.details}},
                            status=exc.status)
    return JsonResponse({"sessionId": session.id, "callId": session.call_id, "url": websocket_url(request, token)},
                        status=201)
