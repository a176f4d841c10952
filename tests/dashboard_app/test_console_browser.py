"""The operators' console in the real browser (Debian's Chromium via Playwright), as a
member with nothing but a membership: the German dashboard and its charts, a script
heard before saving and its findings while typing, a call found by a transcript
word, a callback started from the inbox. Screenshots go to test-output/console/."""
import datetime as dt
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from playwright.sync_api import expect, sync_playwright

from calls_app.models import Call, Carrier, TranscriptEntry, UsageCounter
from console.tenants.services import membership_add, tenant_create
from leads_app.models import Lead
from tests.browser import CHROMIUM, CHROMIUM_ARGS, RECORD_VIOLATIONS, needs_chromium, violations

pytestmark = [needs_chromium, pytest.mark.usefixtures("render_cache_dir")]

OUTPUT_DIR = Path(settings.BASE_DIR) / "test-output" / "console"
PASSWORD = "Konsole-Test-Passwort-1"


@pytest.fixture
def console(transactional_db, live_server):
    tenant = tenant_create(slug="praxis", name="Praxis Sonnenschein", minute_cap=600)
    tenant_create(slug="globex", name="Globex")
    user = get_user_model().objects.create_user("mia", "mia@example.com", PASSWORD, is_staff=True)
    membership_add(tenant=tenant, user=user)  # nothing else: no permission given by hand
    carrier = Carrier.objects.create(id="sim-test", secret_nonce="n")
    now = dt.datetime.now(dt.timezone.utc)
    call = Call.objects.create(tenant=tenant, carrier=carrier, direction="inbound", from_e164="+4930901820",
                               to_e164="+493055501234", status="completed", seconds=95, started_at=now)
    TranscriptEntry.objects.create(call=call, role="user", ts=now, text="Ich hätte gern einen Termin am Montag.")
    other = Call.objects.create(tenant=tenant, carrier=carrier, direction="outbound", to_e164="+491711234567",
                                status="no-answer", seconds=0, started_at=now)
    TranscriptEntry.objects.create(call=other, role="assistant", ts=now, text="Guten Tag, hier ist die Praxis.")
    UsageCounter.objects.create(tenant=tenant, period=now.astimezone(dt.timezone.utc).strftime("%Y-%m"),
                                minutes=2, calls=1)
    lead = Lead.objects.create(tenant=tenant, kind="callback", phone="+491712345678",
                               preferred_at="today-am", preferred_at_resolved=now - dt.timedelta(hours=1))
    return {"url": live_server.url, "call": call.pk, "lead": lead.pk}


@pytest.fixture
def page(console):
    """A logged-in German Chromium page (opened after the data: Django's ORM is not
    used while Playwright's event loop runs)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        # bypass_csp: Playwright's wait_for_function evaluates its predicate as a string,
        # which the admin's policy (no unsafe-eval) refuses; the pages' own scripts are
        # unaffected, and the policy itself is tested in tests/console.
        context = browser.new_context(locale="de-DE", viewport={"width": 1366, "height": 900}, bypass_csp=True)
        context.add_init_script(RECORD_VIOLATIONS)
        page = context.new_page()
        page.goto(console["url"] + "/admin/login/")
        page.fill("input[name=username]", "mia")
        page.fill("input[name=password]", PASSWORD)
        page.click("[type=submit]")
        yield page
        context.close()
        browser.close()


def test_a_member_works_through_the_console(console, page):
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    url, seen = console["url"], []

    # The German dashboard with its server-rendered charts.
    expect(page.locator("h1.dashboard-title")).to_have_text("Praxis Sonnenschein")
    expect(page.get_by_role("heading", name="Minuten in diesem Monat")).to_be_visible()
    expect(page.locator("svg.chart")).to_have_count(5)
    expect(page.locator("svg.chart.columns").first.locator("g.day")).to_have_count(30)
    expect(page.locator("#minutes-used")).to_have_text("2")
    expect(page.locator("#overdue")).to_have_text("1")
    assert "Globex" not in page.content()
    page.screenshot(path=OUTPUT_DIR / "dashboard.png", full_page=True)
    seen += violations(page)

    # A script: findings appear while typing, before saving, and the text plays.
    page.goto(url + "/admin/scripts_app/scriptoverride/add/?touchpoint_id=inbound.greeting")
    page.fill("#id_text", "Moechten Sie einen Termin?")
    expect(page.locator("#script-analysis-live mark", has_text="Moechten")).to_be_visible()
    with page.expect_response("**/preview.mp3") as answer:
        page.click("#script-play")
    assert answer.value.ok and answer.value.headers["content-type"] == "audio/mpeg"
    page.wait_for_function("document.getElementById('script-audio').readyState >= 1")
    assert page.evaluate("document.getElementById('script-audio').src").startswith("blob:")
    assert page.evaluate("document.getElementById('script-audio').duration") > 0.5
    seen += violations(page)

    # A call found by a word of its transcript.
    page.goto(url + "/admin/calls_app/call/")
    page.fill("#searchbar", "Termin")
    page.press("#searchbar", "Enter")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    expect(page.locator("#result_list")).to_contain_text("030 901820")
    page.locator("#result_list tbody tr th a").click()
    expect(page.locator(".transcript")).to_contain_text("Termin am Montag")
    page.screenshot(path=OUTPUT_DIR / "call.png", full_page=True)
    seen += violations(page)

    # The inbox: the overdue callback, started with one click.
    page.goto(url + "/admin/leads_app/lead/")
    expect(page.locator(".lead-overdue")).to_contain_text("überfällig")
    page.screenshot(path=OUTPUT_DIR / "inbox.png", full_page=True)
    # It fits a 1,280 px screen: no sideways scrolling.
    page.set_viewport_size({"width": 1280, "height": 900})
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.get_by_role("button", name="Rückruf starten").click()
    expect(page.locator(".messagelist")).to_contain_text("Rückruf gestartet")
    seen += violations(page)

    assert seen == []
