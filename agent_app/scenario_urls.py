"""The test calls' paths under /v2/assistants/{id}/scenarios (agent_app.scenario_views)."""
from rest_framework.routers import SimpleRouter

from agent_app.scenario_views import ScenarioViewSet

router = SimpleRouter(trailing_slash=False)
router.register(r"assistants/(?P<assistant_id>[^/]+)/scenarios", ScenarioViewSet, basename="scenario")

urlpatterns = router.urls
