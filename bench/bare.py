"""The ceiling of the tenant-bound benchmark (issue 14): a bare Django view returning
`{}`, in a Django project of its own with no middleware, no database and only the
contrib apps Django needs, served by the same gunicorn (2 sync workers) as the
console. bench/bench_speed.py serves it as `bench.bare:application`."""
from django.conf import settings

settings.configure(
    DEBUG=False, SECRET_KEY="bench-bare-view-only-" + "x" * 40, ALLOWED_HOSTS=["127.0.0.1"], ROOT_URLCONF=__name__,
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth"], MIDDLEWARE=[],
)

import django  # noqa: E402

django.setup()

from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402


def bare(request):
    return JsonResponse({})


urlpatterns = [path("bare", bare)]
application = get_wsgi_application()
