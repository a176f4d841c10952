from django.urls import path
from rest_framework.routers import SimpleRouter

from leads_app.views import LeadViewSet, PublicLeadView

router = SimpleRouter(trailing_slash=False)
router.register("leads", LeadViewSet, basename="lead")

urlpatterns = [
    path("public/leads", PublicLeadView.as_view(), name="public-leads"),
    *router.urls,
]
