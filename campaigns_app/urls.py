from rest_framework.routers import SimpleRouter

from campaigns_app.views import BlocklistViewSet, CampaignViewSet

router = SimpleRouter(trailing_slash=False)
router.register("campaigns", CampaignViewSet, basename="campaign")
router.register("blocklist", BlocklistViewSet, basename="blocklist")

urlpatterns = router.urls
