"""Leads in the admin: tenant scoping, filters, phone search, bulk status changes."""
import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from leads_app.models import Lead
from leads_app.services import lead_create

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/leads_app/lead/"


@pytest.fixture
def leads(tenant_a, tenant_b):
    return {
        "mobile": lead_create(tenant=tenant_a, kind="callback", phone="+491712345678"),
        "landline": lead_create(tenant=tenant_a, kind="voicemail", phone="+49301234567"),
        "foreign": lead_create(tenant=tenant_b, kind="callback", phone="+4915112345678"),
    }


def admin_client(user):
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="leads_app"))
    client = Client()
    client.force_login(user)
    return client


def listed(response):
    return {lead.pk for lead in response.context["cl"].result_list}


def test_member_sees_only_own_tenants_leads(owner, leads):
    response = admin_client(owner).get(CHANGELIST)

    assert listed(response) == {leads["mobile"].pk, leads["landline"].pk}


def test_member_cannot_open_a_foreign_lead(owner, leads):
    client = admin_client(owner)

    assert client.get(f"{CHANGELIST}{leads['mobile'].pk}/change/").status_code == 200
    assert client.get(f"{CHANGELIST}{leads['foreign'].pk}/change/").status_code == 302  # "does not exist"


def test_filters_by_status_and_kind(owner, leads):
    client = admin_client(owner)
    Lead.objects.filter(pk=leads["landline"].pk).update(status="contacted")

    assert listed(client.get(CHANGELIST, {"status__exact": "contacted"})) == {leads["landline"].pk}
    assert listed(client.get(CHANGELIST, {"kind__exact": "callback"})) == {leads["mobile"].pk}


@pytest.mark.parametrize("term", ["+491712345678", "0171 2345678", "0171", "+49 171 234", "00491712345678"])
def test_search_finds_a_phone_however_it_is_typed(owner, leads, term):
    assert listed(admin_client(owner).get(CHANGELIST, {"q": term})) == {leads["mobile"].pk}


def test_search_does_not_reach_other_tenants(owner, leads):
    assert listed(admin_client(owner).get(CHANGELIST, {"q": "+4915112345678"})) == set()


def test_bulk_action_changes_the_status_of_the_selected_leads(owner, leads):
    response = admin_client(owner).post(CHANGELIST, {
        "action": "mark_contacted",
        "_selected_action": [leads["mobile"].pk, leads["landline"].pk],
    }, follow=True)

    assert response.status_code == 200
    assert "2 Lead(s) als „Kontaktiert“ markiert." in response.content.decode()
    assert set(Lead.objects.filter(status="contacted").values_list("pk", flat=True)) == {
        leads["mobile"].pk, leads["landline"].pk}


def test_bulk_action_cannot_touch_foreign_leads(owner, leads):
    admin_client(owner).post(CHANGELIST, {"action": "mark_spam", "_selected_action": [leads["foreign"].pk]})

    leads["foreign"].refresh_from_db()
    assert leads["foreign"].status == "new"


def test_every_status_has_a_bulk_action(owner, leads):
    actions = admin_client(owner).get(CHANGELIST).context["action_form"].fields["action"].choices

    assert {name for name, _ in actions} >= {f"mark_{status}" for status in Lead.Status.values}
