"""The dashboard's figures against hand-computed ones, in Berlin's days and months,
in a pinned number of queries; and what a member of another tenant sees of them."""
import datetime as dt
import io
import re

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from calls_app.models import Call, Carrier, UsageCounter
from console.tenants.models import Membership
from console.tenants.services import membership_add
from dashboard_app.selectors import dashboard_figures, platform_figures
from leads_app.models import Lead

pytestmark = pytest.mark.django_db

UTC = dt.timezone.utc
# Tuesday, 10 November 2026, 12:00 in Berlin (UTC+1).
NOW = dt.datetime(2026, 11, 10, 11, 0, tzinfo=UTC)


@pytest.fixture
def carrier(db):
    return Carrier.objects.create(id="sim-test", secret_nonce="n")


def add_call(tenant, carrier, at, *, seconds=0, direction="inbound", status="completed", number="+4930901820"):
    call = Call.objects.create(tenant=tenant, carrier=carrier, direction=direction, status=status, seconds=seconds,
                               from_e164=number if direction == "inbound" else "", to_e164="+493055501234"
                               if direction == "inbound" else number)
    Call.objects.filter(pk=call.pk).update(created_at=at, started_at=at)
    return call


def add_lead(tenant, *, status="new", preferred=None, created=NOW - dt.timedelta(hours=1), phone="+491712345678"):
    lead = Lead.objects.create(tenant=tenant, kind="callback", phone=phone, status=status,
                               preferred_at_resolved=preferred)
    Lead.objects.filter(pk=lead.pk).update(created_at=created)
    return lead


@pytest.fixture
def seeded(tenant_a, tenant_b, carrier):
    tenant_a.minute_cap = 300
    tenant_a.save()
    # 31 October 23:30 Berlin is 22:30 UTC: October in Berlin (and in the 30-day chart
    # on 31 Oct); 1 November 00:30 Berlin is 23:30 UTC on 31 October: November in Berlin.
    add_call(tenant_a, carrier, dt.datetime(2026, 10, 31, 22, 30, tzinfo=UTC), seconds=61)   # 2 min, 31 Oct
    add_call(tenant_a, carrier, dt.datetime(2026, 10, 31, 23, 30, tzinfo=UTC), seconds=60)   # 1 min, 1 Nov
    add_call(tenant_a, carrier, dt.datetime(2026, 11, 9, 9, 0, tzinfo=UTC), seconds=125,
             direction="outbound", number="+491711111111")                                    # 3 min, 9 Nov
    add_call(tenant_a, carrier, dt.datetime(2026, 11, 10, 8, 0, tzinfo=UTC), status="no-answer",
             direction="outbound", number="+491712222222")                                    # 0 min, 10 Nov
    add_call(tenant_a, carrier, dt.datetime(2026, 9, 1, 8, 0, tzinfo=UTC), seconds=600)        # outside 30 days
    add_call(tenant_b, carrier, dt.datetime(2026, 11, 10, 8, 0, tzinfo=UTC), seconds=6000,
             number="+498912345678")  # tenant B
    # The usage counter the API reads (the voice runtime books it as calls end).
    UsageCounter.objects.create(tenant=tenant_a, period="2026-11", minutes=30, reserved_minutes=4, calls=3)
    UsageCounter.objects.create(tenant=tenant_a, period="2026-10", minutes=999)
    UsageCounter.objects.create(tenant=tenant_b, period="2026-11", minutes=777)

    add_lead(tenant_a, preferred=NOW - dt.timedelta(hours=2))                         # overdue
    add_lead(tenant_a, status="contacted", preferred=NOW - dt.timedelta(days=1))      # overdue
    add_lead(tenant_a, preferred=dt.datetime(2026, 11, 10, 16, 0, tzinfo=UTC))       # due today (17:00)
    add_lead(tenant_a, preferred=dt.datetime(2026, 11, 10, 23, 30, tzinfo=UTC))      # 00:30 tomorrow: not today
    add_lead(tenant_a, status="converted", preferred=NOW - dt.timedelta(hours=3))    # done: neither
    add_lead(tenant_b, preferred=NOW - dt.timedelta(hours=2), phone="+491719999999")
    return tenant_a


def test_figures_match_the_hand_computed_ones(seeded):
    figures = dashboard_figures(tenant=seeded, now=NOW)
    assert figures["usage"]["minutesThisMonth"] == 30 and figures["usage"]["remainingMinutes"] == 300 - 30 - 4
    # 30 minutes in 10 days of a 30-day month: 90 at month end.
    assert figures["projection"] == 90
    assert figures["daily_share"] == 10
    per_day = figures["per_day"]
    assert len(per_day) == 30 and min(per_day) == dt.date(2026, 10, 12) and max(per_day) == dt.date(2026, 11, 10)
    minutes = {day: entry["minutes"] for day, entry in per_day.items() if entry["minutes"]}
    assert minutes == {dt.date(2026, 10, 31): 2, dt.date(2026, 11, 1): 1, dt.date(2026, 11, 9): 3}
    assert per_day[dt.date(2026, 11, 10)]["outbound"] == 1
    assert per_day[dt.date(2026, 11, 10)]["outcomes"] == {"no-answer": 1}
    assert per_day[dt.date(2026, 11, 1)]["inbound"] == 1
    assert figures["leads_by_status"] == {"new": 3, "contacted": 1, "qualified": 0, "converted": 1, "lost": 0,
                                          "spam": 0}
    assert (figures["overdue"], figures["due_today"]) == (2, 1)
    assert [c.seconds for c in figures["latest_calls"]] == [0, 125, 60, 61, 600]
    assert len(figures["latest_leads"]) == 5


def test_projection_on_the_first_day_of_a_berlin_month(seeded):
    # 1 December 00:30 Berlin is still 30 November in UTC: a new month with no minutes.
    figures = dashboard_figures(tenant=seeded, now=dt.datetime(2026, 11, 30, 23, 30, tzinfo=UTC))
    assert figures["usage"]["period"] == "2026-12"
    assert (figures["usage"]["minutesThisMonth"], figures["projection"], figures["days_in_month"]) == (0, 0, 31)


def test_the_dashboard_takes_the_same_queries_whatever_the_data(seeded, carrier):
    with CaptureQueriesContext(connection) as few:
        dashboard_figures(tenant=seeded, now=NOW)
    for n in range(30):
        add_call(seeded, carrier, NOW - dt.timedelta(hours=n * 7), seconds=n * 11)
        add_lead(seeded, preferred=NOW + dt.timedelta(hours=n))
    with CaptureQueriesContext(connection) as many:
        dashboard_figures(tenant=seeded, now=NOW)
    assert len(few) == len(many) == 6


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


def test_the_member_sees_the_german_dashboard_with_its_charts(seeded, teammate):
    page = logged_in(teammate).get("/admin/").content.decode()
    assert "Übersicht" in page and "Minuten in diesem Monat" in page
    assert page.count('<g class="day"') == 30 * 3  # three day charts of 30 days
    assert '<line class="share"' in page and 'class="bar-used"' in page


def test_a_member_of_another_tenant_sees_nothing_of_tenant_a(seeded, outsider):
    page = logged_in(outsider).get("/admin/").content.decode()
    assert "Acme" not in page and "acme" not in page
    assert re.search(r'id="minutes-used">777<', page)  # Globex's own figures
    assert "+491712345678" not in page and "+4930901820" not in page
    # The switcher offers only the member's tenants; another slug is ignored.
    switched = logged_in(outsider)
    switched.get("/admin/?tenant=acme")
    assert "Acme" not in switched.get("/admin/").content.decode()


def test_superusers_see_platform_totals_and_can_pick_a_tenant(seeded, django_user_model):
    root = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client = logged_in(root)
    assert re.search(r'id="platform-calls">6<', client.get("/admin/").content.decode())
    client.get("/admin/?tenant=acme")
    assert "Acme" in client.get("/admin/").content.decode()


def test_the_operator_make_run_prints_lands_on_the_demo_tenants_dashboard(db, client):
    """Logged in with what `seed_demo` prints (the practice's owner first, then the
    operator: a superuser and the demo tenant's owner), the start page is the demo
    tenant's dashboard with its charts."""
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    (owner, owner_password), (user, password) = re.findall(r"user (\S+)\s+password (\S+)", out.getvalue())
    assert client.login(username=owner, password=owner_password)
    practice = client.get("/admin/").content.decode()
    assert '<h1 class="dashboard-title">Demo Praxis GmbH</h1>' in practice and "Plattform" not in practice
    client.logout()
    response = client.post("/admin/login/?next=/admin/", {"username": user, "password": password, "next": "/admin/"},
                           follow=True)
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == "/admin/"
    assert '<h1 class="dashboard-title">Demo Praxis GmbH</h1>' in page and 'id="minutes-used"' in page
    assert page.count('<g class="day"') == 30 * 3 and 'class="bar-used"' in page
    # Still a superuser: the switcher offers the platform view.
    assert "Plattform (alle Mandanten)" in page
    platform = client.get("/admin/?tenant=", follow=True).content.decode()
    assert '<h1 class="dashboard-title">Plattform</h1>' in platform
    assert '<h1 class="dashboard-title">Plattform</h1>' in client.get("/admin/").content.decode()  # kept
    client.get("/admin/?tenant=demo")
    assert '<h1 class="dashboard-title">Demo Praxis GmbH</h1>' in client.get("/admin/").content.decode()


def test_a_superuser_member_works_in_the_zone_of_their_own_tenant(seeded, django_user_model):
    seeded.time_zone = "America/New_York"
    seeded.save()
    root = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    membership_add(tenant=seeded, user=root, role=Membership.Role.OWNER)
    page = logged_in(root).get("/admin/calls_app/call/").content.decode()
    assert "10.11.2026 03:00" in page  # 08:00 UTC in New York, not 09:00 in Berlin


def test_platform_figures_across_tenants(seeded, tenant_b):
    tenant_b.minute_cap = 800
    tenant_b.save()
    figures = platform_figures(now=NOW)
    per_day = figures["per_day"]
    assert len(per_day) == 30 and max(per_day) == dt.date(2026, 11, 10)
    # Berlin's days: A's 2 min on 31 Oct, 1 min on 1 Nov, 3 on 9 Nov; A's 0 and B's 100 on 10 Nov.
    assert {day: entry["minutes"] for day, entry in per_day.items() if entry["minutes"]} == {
        dt.date(2026, 10, 31): 2, dt.date(2026, 11, 1): 1, dt.date(2026, 11, 9): 3, dt.date(2026, 11, 10): 100}
    assert per_day[dt.date(2026, 11, 10)]["calls"] == 2
    # Globex used 777 of 800 (97 %), Acme 30 + 4 reserved of 300 (11 %).
    assert [(row["slug"], row["used"], row["cap"]) for row in figures["near_cap"]] == [
        ("globex", 777, 800), ("acme", 30, 300)]
    assert round(figures["near_cap"][0]["share"], 3) == round(777 / 800, 3)
    assert figures["near_cap_count"] == 1


def test_platform_figures_take_the_same_queries_whatever_the_data(seeded, carrier, tenant_b):
    with CaptureQueriesContext(connection) as few:
        platform_figures(now=NOW)
    for n in range(20):
        add_call(seeded if n % 2 else tenant_b, carrier, NOW - dt.timedelta(hours=n * 9), seconds=n * 13)
    with CaptureQueriesContext(connection) as many:
        platform_figures(now=NOW)
    assert len(few) == len(many) == 6


def test_the_platform_view_has_charts_of_its_own(seeded, tenant_b, django_user_model):
    tenant_b.minute_cap = 800
    tenant_b.save()
    root = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    page = logged_in(root).get("/admin/").content.decode()
    assert '<h1 class="dashboard-title">Plattform</h1>' in page
    assert "Minuten pro Tag über alle Mandanten" in page and "Mandanten nahe ihrem Kontingent" in page
    assert page.count('<g class="day"') == 30 * 2  # minutes and calls per day
    near = re.search(r'<svg class="chart cap-bars".*?</svg>', page, re.S).group(0)
    assert near.count('<g class="row') == 2 and 'class="row near-cap"' in near and ">Globex<" in near
    assert re.search(r'id="near-cap-count">1</strong>\s+Mandant\(en\) mit 80 % ihres', page)
    assert 'href="?tenant=globex"' in page
