"""The project's URLs plus a bare view, the ceiling the benchmarks compare against."""
from django.http import JsonResponse
from django.urls import path

from console.urls import urlpatterns as console_urlpatterns


def empty(request):
    """No database, no DRF: only Django's request cycle and the project's middleware."""
    return JsonResponse({})


# First, so that resolving the ceiling costs a single pattern match.
urlpatterns = [path("__bench__/empty", empty), *console_urlpatterns]
