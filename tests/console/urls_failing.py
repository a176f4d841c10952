"""The project's URLs plus views that fail on purpose, for the 500 tests."""
from django.urls import path

from console.api import OpenAPIView
from console.urls import urlpatterns as project_urlpatterns


class FailingApiView(OpenAPIView):
    def get(self, request):
        raise RuntimeError("boom in a DRF view")


def failing_plain_view(request):
    raise RuntimeError("boom in a plain view")



urlpatterns = [
    path("v2/__failing__/drf", FailingApiView.as_view()),
    path("voice/__failing__/plain", failing_plain_view),
    *project_urlpatterns,
]
