"""GET /widget/callback.js and the demo page, over plain HTTP (the browser test is
test_widget_browser.py)."""
import re

import pytest

pytestmark = pytest.mark.django_db


def test_widget_is_javascript_that_reads_data_tenant_and_uses_shadow_dom(client):
    response = client.get("/widget/callback.js")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/javascript")
    source = response.content.decode()
    assert 'getAttribute("data-tenant")' in source and "attachShadow" in source
    assert len(response.content) < 15 * 1024


def test_widget_makes_no_third_party_requests_and_sets_no_cookies(client):
    source = client.get("/widget/callback.js").content.decode()

    # The only address it talks to is the origin that served it.
    assert re.findall(r"https?://[^\s\"'<]+", source) == ["https://console.example/widget/callback.js"]
    assert "document.cookie" not in source and "localStorage" not in source
    assert 'credentials: "omit"' in source


def test_widget_has_an_etag_and_answers_a_revalidation_with_304(client):
    first = client.get("/widget/callback.js")

    again = client.get("/widget/callback.js", HTTP_IF_NONE_MATCH=first["ETag"])

    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == first["ETag"]


def test_plain_url_is_cached_for_an_hour_and_versioned_url_for_a_year(client):
    plain = client.get("/widget/callback.js")
    version = plain["ETag"].strip('"')

    versioned = client.get(f"/widget/callback.js?v={version}")
    stale = client.get("/widget/callback.js?v=0000")

    assert plain["Cache-Control"] == "public, max-age=3600"
    assert versioned["Cache-Control"] == "public, max-age=31536000, immutable"
    assert stale["Cache-Control"] == "public, max-age=3600"


def test_widget_can_be_included_by_pages_of_any_origin(client):
    assert client.get("/widget/callback.js")["Cross-Origin-Resource-Policy"] == "cross-origin"


def test_other_widget_names_are_404(client):
    assert client.get("/widget/other.js").status_code == 404


def test_widget_cannot_be_posted_to(client):
    assert client.post("/widget/callback.js").status_code == 405


def test_demo_page_includes_the_current_widget_for_the_demo_tenant(client):
    version = client.get("/widget/callback.js")["ETag"].strip('"')

    response = client.get("/widget/demo")

    assert response.status_code == 200
    include = f'<script src="/widget/callback.js?v={version}" data-tenant="demo" async></script>'
    assert include in response.content.decode()


def test_widget_sends_the_consent_version_of_leads_app_consent():
    from leads_app.consent import VERSION_PATTERN, WIDGET_CONSENT_TEXTS, WIDGET_CONSENT_VERSION
    from leads_app.widget_views import WIDGET_FILE

    source = WIDGET_FILE.read_text()
    assert f'var CONSENT_VERSION = "{WIDGET_CONSENT_VERSION}";' in source
    assert "consent_version: CONSENT_VERSION" in source
    assert WIDGET_CONSENT_VERSION in WIDGET_CONSENT_TEXTS
    assert all(VERSION_PATTERN.match(version) for version in WIDGET_CONSENT_TEXTS)
