from rest_framework.routers import SimpleRouter

from calendars_app.views import CalendarViewSet

router = SimpleRouter(trailing_slash=False)
router.register("calendars", CalendarViewSet, basename="calendar")

urlpatterns = router.urls
