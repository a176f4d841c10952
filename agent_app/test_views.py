"""The admin's "Im Browser testen" (under /admin/, ahead of the admin's own routes): an
operator talks to one of their tenant's assistants with the microphone, in their admin
session — the voice demo's page script against a session of that assistant. The
session is a test call (calls_app: marked as one, booked against no cap)."""
from django.conf import settings
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from agent_app.conversation import first_heard
from agent_app.services import agent_session_create
from agent_app.views import websocket_url
from console.assistants.models import Assistant
from console.errors import ApiError


def _assistant(request: HttpRequest, assistant_id: str, *, change: bool = False) -> Assistant:
    """The assistant as the admin shows it to this user (its tenant's scoping): another
    tenant's is not found; testing it needs the right to change it."""
    model_admin = admin.site.get_model_admin(Assistant)
    assistant = model_admin.get_queryset(request).filter(pk=assistant_id).select_related("tenant").first()
    if assistant is None or not model_admin.has_view_permission(request, assistant):
        raise Http404("No such assistant.")
    if change and not model_admin.has_change_permission(request, assistant):
        raise PermissionDenied
    return assistant


def browser_test_page(request: HttpRequest, assistant_id: str) -> HttpResponse:
    assistant = _assistant(request, assistant_id)
    response = TemplateResponse(request, "agent_app/browser_test.html", {
        **admin.site.each_context(request), "title": _("Test in the browser: %(name)s") % {"name": assistant.name},
        "assistant": assistant, "first_heard": first_heard(assistant), "opts": Assistant._meta,
        "max_minutes": settings.AGENT_TEST_CALL_MAX_MINUTES,
    })
    if settings.AGENT_WS_URL:  # the WebSocket on another port or host: the page may connect there
        response._csp_update = {"connect-src": [settings.AGENT_WS_URL.rstrip("/")]}  # type: ignore[attr-defined]
    return response


@require_POST
def browser_test_session(request: HttpRequest, assistant_id: str) -> JsonResponse:
    """A session of the assistant for the page (CSRF-checked, the admin's session): a test call."""
    assistant = _assistant(request, assistant_id, change=True)
    try:
        session, token = agent_session_create(tenant=assistant.tenant, assistant_id=assistant.pk, test=True)
    except ApiError as exc:
        return JsonResponse({"error": {"code": exc.code, "message": exc.message, "details": exc.details}},
                            status=exc.status)
    return JsonResponse({"sessionId": session.id, "callId": session.call_id, "url": websocket_url(request, token)},
                        status=201)
