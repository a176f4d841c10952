"""The admin under its Content-Security-Policy, in the real browser: the project's own
admin pages work without a single violation (their scripts and styles are static
files), and a script injected into a page does not run."""
import pytest
from django.core.management import call_command
from playwright.sync_api import expect, sync_playwright

from calls_app.models import Call
from console.tenants.models import Tenant
from console.tenants.services import tenant_create
from tests.browser import CHROMIUM, CHROMIUM_ARGS, RECORD_VIOLATIONS, inject_into_html, needs_chromium, violations

pytestmark = needs_chromium

PASSWORD = "Csp-Test-Password-1"


@pytest.fixture
def console(transactional_db, live_server, django_user_model):
    """The demo data, a second tenant, and a superuser to log in with."""
    call_command("seed_demo", stdout=open("/dev/null", "w"))
    tenant_create(slug="globex", name="Globex")
    django_user_model.objects.create_superuser("root", "root@example.com", PASSWORD)
    return {
        "url": live_server.url,
        "call": Call.objects.filter(transcript_entries__role="system").first().pk,
        "tenant": Tenant.objects.get(slug="demo").pk,
    }


@pytest.fixture
def admin_page(console):
    """A logged-in Chromium page that records policy violations (opened after the
    data: Django's ORM is not used while Playwright's event loop runs)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context()
        context.add_init_script(RECORD_VIOLATIONS)
        page = context.new_page()
        page.goto(console["url"] + "/admin/login/")
        page.fill("input[name=username]", "root")
        page.fill("input[name=password]", PASSWORD)
        page.click("[type=submit]")
        expect(page.locator("#site-name")).to_be_visible()
        yield page
        context.close()
        browser.close()


def test_the_projects_admin_pages_work_without_a_policy_violation(console, admin_page):
    page, url, seen = admin_page, console["url"], []

    def visit(path):
        page.goto(url + path)
        seen.extend(f"{path}: {v}" for v in violations(page))

    for path in ("/admin/", "/admin/leads_app/lead/", "/admin/scripts_app/scriptoverride/add/",
                 f"/admin/tenants/tenant/{console['tenant']}/change/", "/admin/tenants/membership/add/",
                 "/admin/calls_app/carrier/"):
        visit(path)
        expect(page.locator("#content")).to_be_visible()

    visit(f"/admin/calls_app/call/{console['call']}/change/")
    system_line = page.locator(".transcript-system").first
    assert system_line.evaluate("el => getComputedStyle(el).backgroundColor") == "rgb(255, 248, 225)"

    # The effective scripts page: highlighted findings, and the tenant picker's script.
    visit("/admin/scripts_app/scriptoverride/effective/")
    assert page.locator("#effective-scripts").evaluate("el => el.getBoundingClientRect().width") > 600
    with page.expect_navigation():
        page.select_option("#tenant", "globex")
    assert page.url.endswith("?tenant=globex")
    seen.extend(f"effective?tenant=globex: {v}" for v in violations(page))

    # A key made in the admin is shown once, styled from the static file.
    visit("/admin/credentials/apikey/add/")
    page.select_option("select[name=tenant]", label="Demo Praxis GmbH (demo)")
    page.click("input[type=submit].default")  # 'Create key' or 'Schlüssel anlegen', as the browser asks
    # Retried until it holds: the click does not wait for the new page's stylesheet.
    expect(page.locator("#raw-key")).to_have_css("user-select", "all")
    seen.extend(f"key created: {v}" for v in violations(page))

    assert seen == []


def test_a_script_injected_into_an_admin_page_does_not_run(console, admin_page):
    page = admin_page
    inject_into_html(page, "**/admin/leads_app/lead/", '<script>window.__injected = "ran";</script>'
                                                       '<div onclick="window.__injected = 1" id="bait">x</div>'
                                                       '<script src="https://evil.example/x.js"></script>')

    page.goto(console["url"] + "/admin/leads_app/lead/")
    page.locator("#bait").dispatch_event("click")

    assert page.evaluate("window.__injected") is None
    blocked = sorted(v.split(" ")[0] for v in violations(page))
    assert blocked == ["script-src-attr", "script-src-elem", "script-src-elem"], violations(page)
    # The admin's own scripts still run: the changelist's action bar is wired up.
    page.locator("#action-toggle").check()
    expect(page.locator(".action-counter")).to_contain_text("selected")
