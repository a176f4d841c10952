from django.contrib import admin
from django.urls import include, path
from django.utils.translation import gettext_lazy as _
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from console.assistants.views import AssistantViewSet
from console.numbers.views import PhoneNumberViewSet
from console.tenants.views import AudioSettingsView
from console.views import HealthView

admin.site.site_header = "Stimmwerk"
admin.site.site_title = "Stimmwerk"
admin.site.index_title = _("Dashboard")
# "View site" opens the API's docs page: the console has no public site of its own,
# and the dashboard is the admin's own start page.
admin.site.site_url = "/v2/docs"

router = SimpleRouter(trailing_slash=False)
router.register("assistants", AssistantViewSet, basename="assistant")
router.register("numbers", PhoneNumberViewSet, basename="number")

urlpatterns = [
    # The root leads to the admin (its login first): `make run` prints this address.
    path("", RedirectView.as_view(url="/admin/", permanent=False), name="root"),
    path("health", HealthView.as_view(), name="health"),
    path("v2/schema", SpectacularAPIView.as_view(), name="schema"),
    # The document to read in a browser: Swagger UI from drf-spectacular-sidecar's static files.
    path("v2/docs", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("v2/audio/settings", AudioSettingsView.as_view(), name="audio-settings"),
    path("v2/", include(router.urls)),
    # Each app owns the paths of its resource; see its urls.py.
    path("v2/", include("scripts_app.urls")),
    path("v2/", include("leads_app.urls")),
    path("v2/", include("calls_app.urls")),
    path("v2/", include("registry_app.urls")),
    path("v2/", include("speech_app.urls")),
    path("v2/", include("privacy_app.urls")),
    path("v2/", include("webhooks_app.urls")),
    path("v2/", include("campaigns_app.urls")),
    path("v2/", include("tools_app.urls")),
    path("v2/", include("knowledge_app.urls")),
    path("v2/", include("messaging_app.urls")),
    path("v2/", include("calendars_app.urls")),
    path("v2/", include("agent_app.scenario_urls")),
    path("voice/", include("calls_app.voice_urls")),
    path("voice/", include("agent_app.phone_urls")),
    path("api/voice/agent/", include("agent_app.urls")),
    path("api/voice/", include("speech_app.module_urls")),
    path("widget/", include("leads_app.widget_urls")),
    path("widget/", include("agent_app.demo_urls")),
    path("v1/", include("gateway_app.urls")),
    path("agent", include("gateway_app.agent_urls")),
    # The dashboard is the admin's start page (dashboard_app), ahead of the admin's index.
    path("admin/", include("dashboard_app.urls")),
    # "Im Browser testen" of an assistant (agent_app), ahead of the admin's own routes.
    path("admin/", include("agent_app.test_urls")),
    path("admin/", admin.site.urls),
]
