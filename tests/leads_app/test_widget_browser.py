"""The callback widget in a real browser: Debian's Chromium driven by Playwright.

The widget is served by the Django live server; the page that includes it comes from
a second local origin (a small HTTP server on another port), as on a customer's site,
so the post is a real cross-origin request with its CORS preflight.
"""
import json
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect, sync_playwright

from console.credentials.services import api_key_create
from console.phone import InvalidPhoneNumber, to_e164
from console.tenants.services import tenant_create
from leads_app.consent import WIDGET_CONSENT_TEXTS, WIDGET_CONSENT_VERSION
from tests.browser import CHROMIUM, CHROMIUM_ARGS, HostPageServer, needs_chromium

OUTPUT_DIR = Path(settings.BASE_DIR) / "test-output" / "leads_app"
WIDGET_BLUE = "rgb(11, 92, 173)"

pytestmark = needs_chromium

HOST_PAGE = """<!doctype html>
<html lang="de"><head><meta charset="utf-8"><title>Shop</title>
<style>
  /* A customer's page with rules that would restyle a widget that is not isolated. */
  h1 {{ color: rgb(200, 0, 0); }}
  button {{ background: rgb(255, 0, 255) !important; font-size: 40px; }}
  div {{ display: none; }}
</style></head>
<body><h1>Blumen Schmidt</h1>
<script src="{widget}" data-tenant="{tenant}" async></script>
</body></html>"""


@pytest.fixture
def shop(transactional_db, live_server):
    """A tenant whose web origin is the host page's, its API key, and that page."""
    html = HOST_PAGE.format(widget=f"{live_server.url}/widget/callback.js", tenant="shop")
    with HostPageServer(html) as server:
        tenant = tenant_create(slug="shop", name="Blumen Schmidt", origins=[server.origin])
        key = api_key_create(tenant=tenant, name="browser test")[1]
        yield {"origin": server.origin, "key": key, "api": live_server.url}


@pytest.fixture
def page(shop):
    """A fresh Chromium page. Django's ORM is not used while it is open: Playwright's
    sync API runs an event loop, which Django refuses to run queries in."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(locale="de-DE")
        yield context.new_page()
        context.close()
        browser.close()


def leads_of(shop):
    request = urllib.request.Request(
        f"{shop['api']}/v2/leads", headers={"Authorization": f"Bearer {shop['key']}", "X-Tenant": "shop"}
    )
    with urllib.request.urlopen(request) as response:
        return json.load(response)["leads"]


def open_widget(page, shop):
    page.goto(shop["origin"] + "/")
    page.get_by_role("button", name="Rückruf anfordern").click()
    return page.get_by_role("dialog", name="Wir rufen Sie zurück")


def test_visitor_requests_a_callback_from_a_page_on_another_origin(page, shop):
    dialog = open_widget(page, shop)
    dialog.get_by_label("Ihre Telefonnummer").fill("0171 2345678")
    dialog.get_by_label("Wann passt es Ihnen?").select_option(label="Morgen Vormittag")
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=OUTPUT_DIR / "widget-open.png")
    consent_shown = " ".join(dialog.locator("#consent").inner_text().split())

    dialog.get_by_role("button", name="Rückruf senden").click()

    expect(dialog.get_by_role("status")).to_have_text("Vielen Dank! Wir rufen Sie zurück.")
    [lead] = leads_of(shop)
    assert (lead["phone"], lead["kind"], lead["preferred_at"]) == ("+491712345678", "callback", "tomorrow-am")
    assert lead["page_url"] == shop["origin"] + "/"
    assert lead["status"] == "new" and lead["preferred_at_resolved"]
    # The lead keeps the version of exactly the consent sentence the visitor saw.
    assert lead["consent_version"] == WIDGET_CONSENT_VERSION
    assert consent_shown == WIDGET_CONSENT_TEXTS[lead["consent_version"]]


def test_widget_shows_a_german_message_for_a_bad_phone_number(page, shop):
    with pytest.raises(InvalidPhoneNumber):
        to_e164("abc")  # the server refuses it (in English, for developers)
    dialog = open_widget(page, shop)
    phone = dialog.get_by_label("Ihre Telefonnummer")
    phone.fill("abc")

    dialog.get_by_role("button", name="Rückruf senden").click()

    expect(dialog.get_by_role("alert")).to_have_text(
        "Bitte geben Sie eine gültige Telefonnummer ein, z. B. 0171 2345678 oder +49 30 1234567.")
    expect(phone).to_have_attribute("aria-invalid", "true")
    expect(phone).to_be_focused()
    assert leads_of(shop) == []


def test_widget_keeps_its_looks_and_leaves_the_page_alone(page, shop):
    page.goto(shop["origin"] + "/")
    trigger = page.get_by_role("button", name="Rückruf anfordern")

    expect(trigger).to_be_visible()
    assert trigger.evaluate("el => getComputedStyle(el).backgroundColor") == WIDGET_BLUE
    assert trigger.evaluate("el => getComputedStyle(el).fontSize") == "15px"
    assert page.locator("h1").evaluate("el => getComputedStyle(el).color") == "rgb(200, 0, 0)"
    assert page.evaluate("document.cookie") == ""


def test_widget_works_with_the_keyboard_alone(page, shop):
    page.goto(shop["origin"] + "/")
    trigger = page.get_by_role("button", name="Rückruf anfordern")
    expect(trigger).to_be_visible()

    page.keyboard.press("Tab")
    expect(trigger).to_be_focused()
    page.keyboard.press("Enter")
    expect(trigger).to_have_attribute("aria-expanded", "true")
    expect(page.get_by_label("Ihre Telefonnummer")).to_be_focused()
    page.keyboard.press("Escape")

    expect(page.get_by_role("dialog")).to_be_hidden()
    expect(trigger).to_be_focused()
