from rest_framework.routers import SimpleRouter

from tools_app.views import HttpToolViewSet

router = SimpleRouter(trailing_slash=False)
router.register("tools", HttpToolViewSet, basename="tool")

urlpatterns = router.urls
