from django.urls import path
from rest_framework.routers import SimpleRouter

from calls_app.views import CallViewSet, UsageView

router = SimpleRouter(trailing_slash=False)
router.register("calls", CallViewSet, basename="call")

urlpatterns = [
    path("usage", UsageView.as_view(), name="usage"),
    *router.urls,
]
