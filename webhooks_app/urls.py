from rest_framework.routers import SimpleRouter

from webhooks_app.views import WebhookEndpointViewSet

router = SimpleRouter(trailing_slash=False)
router.register("webhooks", WebhookEndpointViewSet, basename="webhook")

urlpatterns = router.urls
