"""`GET /v2/leads` past 200: cursor pages like calls, and the lead filters."""
import datetime as dt

import pytest

from leads_app.models import Lead
from tests.conftest import error_of

pytestmark = pytest.mark.django_db

START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def add_leads(tenant, count, *, first=0, **fields):
    leads = Lead.objects.bulk_create([
        Lead(tenant=tenant, kind=fields.get("kind", "callback"), phone=fields.get("phone", "+491711234567"),
             status=fields.get("status", "new"))
        for _ in range(count)
    ])
    for n, lead in enumerate(leads):
        Lead.objects.filter(pk=lead.pk).update(created_at=START + dt.timedelta(seconds=first + n))
    return [lead.pk for lead in leads]


def test_walking_the_lead_pages_returns_every_lead_once_while_leads_arrive(api_a, tenant_a):
    ids = add_leads(tenant_a, 450)
    seen, url, page = [], "/v2/leads?limit=200", 0
    while url:
        body = api_a.get(url).json()
        seen += [lead["id"] for lead in body["leads"]]
        page += 1
        add_leads(tenant_a, 3, first=10_000 + page * 10)
        url = f"/v2/leads?limit=200&cursor={body['next']}" if body["next"] else None
    assert seen == list(Lead.objects.filter(pk__in=ids).order_by("-created_at", "-id").values_list("id", flat=True))
    assert page == 3


def test_a_lead_page_takes_the_same_queries_at_any_depth(api_a, tenant_a, django_assert_num_queries):
    add_leads(tenant_a, 30)
    first = api_a.get("/v2/leads?limit=10").json()
    # The page of leads, their tenant joined (the credential and the tenant of the first
    # request are kept for a moment: console/credentials).
    with django_assert_num_queries(1):
        deep = api_a.get(f"/v2/leads?limit=10&cursor={first['next']}").json()
    with django_assert_num_queries(1):
        api_a.get(f"/v2/leads?limit=10&cursor={deep['next']}")


def test_a_calls_cursor_or_another_tenants_cursor_is_no_leads_cursor(api_a, api_b, tenant_a, tenant_b):
    add_leads(tenant_b, 3)
    foreign = api_b.get("/v2/leads?limit=1").json()["next"]
    response = api_a.get("/v2/leads", {"cursor": foreign})
    assert response.status_code == 400 and error_of(response)["code"] == "invalid_cursor"


@pytest.fixture
def mixed_leads(tenant_a, tenant_b):
    specs = {
        "new_cb": dict(kind="callback", status="new", phone="+4930901820", first=0),
        "new_contact": dict(kind="contact", status="new", phone="+491711234567", first=100),
        "spam_cb": dict(kind="callback", status="spam", phone="+4930901820", first=200),
        "lost_vm": dict(kind="voicemail", status="lost", phone="+4930901820", first=300),
    }
    made = {name: add_leads(tenant_a, 1, **spec)[0] for name, spec in specs.items()}
    add_leads(tenant_b, 1, kind="callback", status="new", phone="+4930901820")
    return made


def listed(api, **query):
    response = api.get("/v2/leads", query)
    assert response.status_code == 200, response.json()
    return [lead["id"] for lead in response.json()["leads"]]


def names(made, *wanted):
    return [made[name] for name in reversed(list(made)) if name in wanted]


def test_each_lead_filter_alone(api_a, mixed_leads):
    m = mixed_leads
    assert listed(api_a, status="new") == names(m, "new_cb", "new_contact")
    assert listed(api_a, kind="callback") == names(m, "new_cb", "spam_cb")
    for typed in ("030 901820", "+49 30 901820", "+4930901820"):
        assert listed(api_a, phone=typed) == names(m, "new_cb", "spam_cb", "lost_vm"), typed
    assert listed(api_a, since="2026-01-01T00:03:20Z") == names(m, "spam_cb", "lost_vm")
    assert listed(api_a, until="2026-01-01T00:01:40Z") == names(m, "new_cb")


def test_lead_filters_combined(api_a, mixed_leads):
    m = mixed_leads
    assert listed(api_a, kind="callback", status="new") == names(m, "new_cb")
    assert listed(api_a, phone="030 901820", since="2026-01-01T00:00:01Z") == names(m, "spam_cb", "lost_vm")
    assert listed(api_a, phone="030 901820", since="2026-01-01T00:00:01Z", until="2026-01-01T00:05:00Z",
                  kind="callback") == names(m, "spam_cb")


def test_lead_query_mistakes_name_the_fix(api_a, tenant_a):
    error = error_of(api_a.get("/v2/leads?status=neu"))
    assert "new, contacted, qualified, converted, lost, spam" in error["details"]["status"][0]
    response = api_a.get("/v2/leads?stauts=new")
    assert response.status_code == 400
    assert list(error_of(response)["details"]) == ["stauts"]
    assert "Accepted: limit, cursor, status, kind, phone, since, until" in error_of(response)["message"]
