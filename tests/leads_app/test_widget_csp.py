"""The widget under Content-Security-Policies, in the real browser: on a customer's
page with a strict policy of its own (the page adds only the console's origin to
script-src and connect-src, docs/api.md), and on our demo page, whose policy keeps an
injected inline script from running."""
import json
import urllib.request

import pytest
from playwright.sync_api import expect, sync_playwright

from console.credentials.services import api_key_create
from console.demo import DEMO_SLUG
from console.tenants.services import tenant_create
from tests.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    RECORD_VIOLATIONS,
    HostPageServer,
    inject_into_html,
    needs_chromium,
    violations,
)

pytestmark = needs_chromium

WIDGET_BLUE = "rgb(11, 92, 173)"
INJECTED = ('<script>window.__injected = "inline script ran";</script>'
            '<img src="/nowhere.png" onerror="window.__injected = \'event handler ran\'">')

# A customer's page that allows scripts and connections from the console's origin and
# nothing inline: not even its own inline script runs.
STRICT_PAGE = """<!doctype html>
<html lang="de"><head><meta charset="utf-8"><title>Shop</title></head>
<body><h1>Blumen Schmidt</h1>
<script>window.__inline = "the page's inline script ran";</script>
<script src="{api}/widget/callback.js" data-tenant="shop" async></script>
</body></html>"""
STRICT_POLICY = "default-src 'self'; script-src 'self' {api}; connect-src 'self' {api}; object-src 'none'; base-uri 'none'"


@pytest.fixture
def browser_page():
    """A fresh Chromium page that records policy violations. Django's ORM is not used
    while it is open (Playwright's sync API runs an event loop)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(locale="de-DE")
        context.add_init_script(RECORD_VIOLATIONS)
        yield context.new_page()
        context.close()
        browser.close()


def leads_of(api, key, tenant):
    request = urllib.request.Request(f"{api}/v2/leads", headers={"Authorization": f"Bearer {key}", "X-Tenant": tenant})
    with urllib.request.urlopen(request) as response:
        return json.load(response)["leads"]


def send_callback(page):
    page.get_by_role("button", name="Rückruf anfordern").click()
    dialog = page.get_by_role("dialog", name="Wir rufen Sie zurück")
    dialog.get_by_label("Ihre Telefonnummer").fill("0171 2345678")
    dialog.get_by_role("button", name="Rückruf senden").click()
    expect(dialog.get_by_role("status")).to_have_text("Vielen Dank! Wir rufen Sie zurück.")


@pytest.fixture
def strict_shop(transactional_db, live_server):
    api = live_server.url
    with HostPageServer(STRICT_PAGE.format(api=api),
                        headers={"Content-Security-Policy": STRICT_POLICY.format(api=api)}) as server:
        tenant = tenant_create(slug="shop", name="Blumen Schmidt", origins=[server.origin])
        yield {"origin": server.origin, "api": api, "key": api_key_create(tenant=tenant, name="csp test")[1]}


def test_widget_works_on_a_page_with_a_strict_policy_of_its_own(strict_shop, browser_page):
    page = browser_page
    page.goto(strict_shop["origin"] + "/")
    trigger = page.get_by_role("button", name="Rückruf anfordern")
    expect(trigger).to_be_visible()

    # The page's policy is really in force: its own inline script did not run.
    assert page.evaluate("window.__inline") is None
    # The widget's styles apply although the page allows no inline style.
    assert trigger.evaluate("el => getComputedStyle(el).backgroundColor") == WIDGET_BLUE
    send_callback(page)

    # The one thing blocked is the page's own inline script; nothing of the widget.
    assert [v.split(" ")[:2] for v in violations(page)] == [["script-src-elem", "inline"]], violations(page)
    [lead] = leads_of(strict_shop["api"], strict_shop["key"], "shop")
    assert lead["phone"] == "+491712345678"


@pytest.fixture
def demo(transactional_db, live_server):
    tenant = tenant_create(slug=DEMO_SLUG, name="Demo Praxis GmbH")
    return {"api": live_server.url, "key": api_key_create(tenant=tenant, name="csp test")[1]}


def test_an_injected_inline_script_does_not_run_on_the_demo_page_and_the_widget_still_works(demo, browser_page):
    page = browser_page
    inject_into_html(page, "**/widget/demo", INJECTED)
    page.goto(demo["api"] + "/widget/demo")
    expect(page.get_by_role("button", name="Rückruf anfordern")).to_be_visible()

    assert page.evaluate("window.__injected") is None
    # The page's own (nonced) styles apply, the widget keeps its own.
    assert page.locator("body").evaluate("el => getComputedStyle(el).backgroundColor") == "rgb(253, 246, 227)"
    assert page.get_by_role("button", name="Rückruf anfordern").evaluate(
        "el => getComputedStyle(el).backgroundColor") == WIDGET_BLUE
    send_callback(page)
    assert len(leads_of(demo["api"], demo["key"], DEMO_SLUG)) == 1
    # Blocked were the injected script and event handler, nothing of the page or the widget.
    blocked = violations(page)
    assert sorted(v.split(" ")[:2] for v in blocked) == [["script-src-attr", "inline"],
                                                         ["script-src-elem", "inline"]], blocked
