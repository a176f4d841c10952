"""The embeddable widget (`/widget/callback.js`) and its demo page (`/widget/demo`)."""
import hashlib
from functools import cache
from pathlib import Path

from django.http import HttpResponse, HttpResponseNotModified
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_safe

from console.demo import DEMO_SLUG

WIDGET_FILE = Path(__file__).resolve().parent / "widget" / "callback.js"
# `callback.js` alone is revalidated hourly (a fix reaches customers' pages soon, and
# the ETag makes each revalidation a 304); `callback.js?v=<version>` never changes.
PLAIN_CACHE = "public, max-age=3600"
VERSIONED_CACHE = "public, max-age=31536000, immutable"


@cache
def widget_script():
    """(source bytes, version): the version is a hash of the source, read once per process."""
    source = WIDGET_FILE.read_bytes()
    return source, hashlib.sha256(source).hexdigest()[:16]


def widget_version():
    return widget_script()[1]


@require_safe
def callback_js(request):
    source, version = widget_script()
    etag = f'"{version}"'
    if etag in [tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")]:
        response = HttpResponseNotModified()
    else:
        response = HttpResponse(source, content_type="text/javascript; charset=utf-8")
    response["ETag"] = etag
    response["Cache-Control"] = VERSIONED_CACHE if request.GET.get("v") == version else PLAIN_CACHE
    # Pages of any origin include the script, also pages that isolate themselves (COEP).
    response["Cross-Origin-Resource-Policy"] = "cross-origin"
    patch_vary_headers(response, ["Accept-Encoding"])
    return response


@require_safe
def demo_page(request):
    return render(request, "leads_app/widget_demo.html", {"tenant": DEMO_SLUG, "version": widget_version()})
