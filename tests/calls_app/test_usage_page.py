"""The usage page: per tenant and month the cap, used, reserved, remaining and a bar."""
import re

import pytest
from django.test import Client

from calls_app.models import UsageCounter

pytestmark = pytest.mark.django_db


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


def test_usage_shows_cap_used_reserved_and_remaining(owner, tenant_a):
    UsageCounter.objects.create(tenant=tenant_a, period="2026-11", minutes=6, reserved_minutes=1)
    page = logged_in(owner).get("/admin/calls_app/usagecounter/").content.decode()
    cells = re.findall(r'<td class="field-(cap|used|reserved_minutes|remaining)">(\d+)</td>', page)
    assert dict(cells) == {"cap": "10", "used": "6", "reserved_minutes": "1", "remaining": "3"}
    assert '<meter min="0" max="10"' in page
