"""The list endpoint's direct representation (serializers.lead_list_data) is byte for byte
what LeadSerializer renders, for every filter, and so is the endpoint's body."""
import datetime as dt
import zoneinfo

import pytest
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from leads_app.models import Lead
from leads_app.selectors import lead_rows
from leads_app.serializers import LeadSerializer, lead_list_data

pytestmark = pytest.mark.django_db

MOMENT = dt.datetime(2025, 3, 30, 0, 30, 0, 250000, tzinfo=dt.timezone.utc)


@pytest.fixture
def varied_leads(tenant_a, tenant_b):
    """Every kind and status, preferred times, page URLs and consent versions set and empty, equal creation
    times (ordered by id then), microseconds and none; leads of another tenant."""
    for tenant in (tenant_a, tenant_b):
        for n in range(30):
            Lead.objects.create(
                tenant=tenant, kind=Lead.Kind.values[n % 3], phone=f"+4917112345{n:02d}",
                preferred_at="tomorrow-am" if n % 4 else "", page_url="https://acme.example/k?x=\"1\"" if n % 5 else "",
                preferred_at_resolved=MOMENT + dt.timedelta(days=n) if n % 4 else None,
                status=Lead.Status.values[n % 6], consent_version="2025-01" if n % 3 else "",
            )
    for n, lead in enumerate(Lead.objects.filter(tenant=tenant_a).order_by("id")):
        Lead.objects.filter(pk=lead.pk).update(created_at=MOMENT + dt.timedelta(minutes=n // 2, microseconds=n % 3))


def expected(tenant, *, status=None, kind=None, limit):
    leads = Lead.objects.for_tenant(tenant).select_related("tenant")
    leads = leads.filter(**{name: value for name, value in (("status", status), ("kind", kind)) if value})
    return render(LeadSerializer(leads.order_by("-created_at", "-id")[:limit], many=True).data)


def render(data):
    return JSONRenderer().render({"leads": data})


@pytest.mark.parametrize("status, kind, limit", [
    (None, None, 50), (None, None, 7), ("new", None, 50), (None, "voicemail", 3), ("lost", "contact", 200),
])
@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_list_data_renders_exactly_as_the_serializer(varied_leads, tenant_a, status, kind, limit, zone):
    with timezone.override(zoneinfo.ZoneInfo(zone)):
        body = expected(tenant_a, status=status, kind=kind, limit=limit)
        rows = lead_rows(tenant=tenant_a, status=status, kind=kind, limit=limit)
        assert render(lead_list_data(rows, tenant_slug=tenant_a.slug)) == body
    assert body.count(b'"id"') == min(limit, Lead.objects.filter(
        tenant=tenant_a, **({"status": status} if status else {}), **({"kind": kind} if kind else {})).count())


def test_list_endpoint_serves_the_serializer_bytes(varied_leads, tenant_a, api_a):
    # The whole list fits one page: the envelope ends with `"next": null`.
    last_page = b',"next":null}'
    assert api_a.get("/v2/leads?limit=200").content == expected(tenant_a, limit=200)[:-1] + last_page
    assert api_a.get("/v2/leads?status=spam&kind=voicemail").content == expected(
        tenant_a, status="spam", kind="voicemail", limit=50)[:-1] + last_page
