"""The same number posting again within 24 hours while its lead is open is folded
into that lead with a counter, not stored as a new row; the answer keeps its shape."""
import datetime as dt

import pytest

from leads_app.models import Lead
from leads_app.preferred_time import parse as parse_preferred_time
from leads_app.services import lead_receive
from tests.conftest import make_client

pytestmark = pytest.mark.django_db

MOBILE = "+491712345678"


def post(phone="0171 2345678", tenant="acme", **extra):
    return make_client().post("/v2/public/leads", {"tenant": tenant, "kind": "callback", "phone": phone, **extra},
                              format="json", HTTP_ORIGIN="https://acme.example")


def test_a_second_post_of_the_same_number_raises_the_first_leads_counter(tenant_a):
    first = post()
    second = post(phone="+49 171 2345678", preferred_at="tomorrow-pm")
    assert first.status_code == second.status_code == 201
    assert set(second.json()) == {"id", "status"} and second.json()["id"] == first.json()["id"]
    [lead] = Lead.objects.all()
    assert lead.repeat_count == 1 and lead.repeated_at is not None
    assert lead.preferred_at == "tomorrow-pm"  # the newer wish counts


def test_a_lead_that_is_done_or_older_than_a_day_is_not_folded_into(tenant_a):
    done = lead_receive(tenant=tenant_a, kind="callback", phone=MOBILE)
    done.status = Lead.Status.CONVERTED
    done.save()
    fresh = lead_receive(tenant=tenant_a, kind="callback", phone=MOBILE)
    assert fresh.pk != done.pk
    Lead.objects.filter(pk=fresh.pk).update(created_at=fresh.created_at - dt.timedelta(hours=25))
    assert lead_receive(tenant=tenant_a, kind="callback", phone=MOBILE).pk not in (done.pk, fresh.pk)


def test_duplicates_are_counted_per_tenant(tenant_a, tenant_b):
    mine = lead_receive(tenant=tenant_a, kind="callback", phone=MOBILE)
    theirs = lead_receive(tenant=tenant_b, kind="callback", phone=MOBILE,
                          preferred_time=parse_preferred_time("asap"))
    assert mine.pk != theirs.pk and Lead.objects.count() == 2
    assert lead_receive(tenant=tenant_a, kind="contact", phone=MOBILE).pk == mine.pk
    assert Lead.objects.get(pk=mine.pk).repeat_count == 1 and Lead.objects.get(pk=theirs.pk).repeat_count == 0
