"""The leads inbox of the demo data `make run` seeds fits a 1,280 px screen: the practice's
owner and the operator (the logins make run prints) scroll it down, never sideways."""
import io
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import sync_playwright

from tests.browser import CHROMIUM, CHROMIUM_ARGS, needs_chromium

pytestmark = [needs_chromium, pytest.mark.slow, pytest.mark.usefixtures("render_cache_dir")]


@pytest.mark.parametrize("login", [0, 1], ids=["practice owner", "platform operator"])
def test_the_demo_inbox_fits_1280_px(transactional_db, live_server, login):
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    user, password = re.findall(r"user (\S+)\s+password (\S+)", out.getvalue())[login]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(locale="de-DE", viewport={"width": 1280, "height": 800})
        page.goto(live_server.url + "/admin/login/")
        page.fill("input[name=username]", user)
        page.fill("input[name=password]", password)
        page.click("[type=submit]")
        page.goto(live_server.url + "/admin/leads_app/lead/")
        rows = page.locator("#result_list tbody tr").count()
        widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        browser.close()
    assert rows > 0
    assert widths[0] <= widths[1], widths
