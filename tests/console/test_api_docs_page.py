"""/v2/docs: the OpenAPI document in a browser, every file served by the app itself."""
import re

from django.conf import settings
from django.contrib.staticfiles import finders
from rest_framework.test import APIClient


def test_the_docs_page_loads_swagger_ui_and_the_schema_from_this_server(db):
    client = APIClient()
    response = client.get("/v2/docs")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "/v2/schema" in page
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sources and all(source.startswith("/") for source in sources), sources
    for source in sources:
        if source.startswith(settings.STATIC_URL):
            # Collected by `collectstatic` (make run) and served by whitenoise.
            assert finders.find(source.removeprefix(settings.STATIC_URL)), source
        else:
            assert client.get(source).status_code == 200, source
