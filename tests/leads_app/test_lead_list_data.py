"""The lead list, derived from its declaration (serializers.LEADS), is byte for byte what
LeadSerializer renders for the same rows, for every filter, and so is the endpoint's
body."""
import datetime as dt
import zoneinfo

import pytest
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from leads_app.models import Lead
from leads_app.serializers import LEADS, LeadSerializer

pytestmark = pytest.mark.django_db

MOMENT = dt.datetime(2025, 3, 30, 0, 30, 0, 250000, tzinfo=dt.timezone.utc)


@pytest.fixture
def varied_leads(tenant_a, tenant_b):
    """Every kind and status, preferred times, page URLs and consent versions set and empty, equal creation
    times (ordered by id then), microseconds and none; leads of another tenant."""
    for tenant in (tenant_a, tenant_b):
        for n in range(30):
            Lead.objects.create(
                tenant=tenant, kind=Lead.Kind.values[n % 3], phone=f"+4917112345{n % 4:02d}",
                preferred_at="tomorrow-am" if n % 4 else "", page_url="https://acme.example/k?x=\"1\"" if n % 5 else "",
                preferred_at_resolved=MOMENT + dt.timedelta(days=n) if n % 4 else None,
                status=Lead.Status.values[n % 6], consent_version="2025-01" if n % 3 else "",
            )
    for n, lead in enumerate(Lead.objects.filter(tenant=tenant_a).order_by("id")):
        Lead.objects.filter(pk=lead.pk).update(created_at=MOMENT + dt.timedelta(minutes=n // 2, microseconds=n % 3))


def through_drf(tenant, *, limit, **filters):
    """What DRF's serializer makes of the same rows (the declaration's queryset)."""
    leads = LEADS.queryset(tenant, **{name: value for name, value in filters.items() if value})
    return render(LeadSerializer(leads.select_related("tenant")[:limit], many=True).data)


def render(data):
    return JSONRenderer().render({"leads": data})


@pytest.mark.parametrize("filters, limit", [
    ({}, 50), ({}, 7), ({"status": "new"}, 50), ({"kind": "voicemail"}, 3), ({"status": "lost", "kind": "contact"}, 200),
    ({"phone": "+491711234501"}, 50), ({"since": MOMENT + dt.timedelta(minutes=3)}, 50),
    ({"until": MOMENT + dt.timedelta(minutes=9), "kind": "callback"}, 4),
])
@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_the_derived_list_renders_exactly_as_the_serializer(varied_leads, tenant_a, filters, limit, zone):
    with timezone.override(zoneinfo.ZoneInfo(zone)):
        body = through_drf(tenant_a, limit=limit, **filters)
        assert render(LEADS.page(tenant_a, {"limit": limit, **filters})["leads"]) == body
    assert body.count(b'"id"') == min(limit, LEADS.queryset(tenant_a, **filters).count()) > 0


def test_list_endpoint_serves_the_serializer_bytes(varied_leads, tenant_a, api_a):
    # The whole list fits one page: the envelope ends with `"next": null`.
    last_page = b',"next":null}'
    assert api_a.get("/v2/leads?limit=200").content == through_drf(tenant_a, limit=200)[:-1] + last_page
    assert api_a.get("/v2/leads?status=spam&kind=voicemail").content == through_drf(
        tenant_a, status="spam", kind="voicemail", limit=50)[:-1] + last_page
