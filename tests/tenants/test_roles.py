"""A membership's role grants its operator group, so a member with nothing but a
membership works in the console at once, and only on their own tenants."""
import pytest
from django.contrib.auth.models import Group
from django.test import Client

from console.tenants.models import Membership
from console.tenants.roles import MEMBER_GROUP, OWNER_GROUP
from console.tenants.services import membership_add

pytestmark = pytest.mark.django_db


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


def group_names(user):
    return set(user.groups.values_list("name", flat=True))


def test_the_role_grants_its_group(owner, teammate):
    assert group_names(owner) == {OWNER_GROUP}
    assert group_names(teammate) == {MEMBER_GROUP}


def test_changing_or_removing_the_membership_changes_the_groups(teammate, tenant_b):
    membership = Membership.objects.get(user=teammate)
    membership.role = Membership.Role.OWNER
    membership.save()
    assert group_names(teammate) == {OWNER_GROUP}
    membership_add(tenant=tenant_b, user=teammate)
    assert group_names(teammate) == {OWNER_GROUP, MEMBER_GROUP}
    membership.delete()
    assert group_names(teammate) == {MEMBER_GROUP}


def test_groups_given_by_hand_stay(teammate):
    helpers = Group.objects.create(name="Helpers")
    teammate.groups.add(helpers)
    Membership.objects.get(user=teammate).delete()
    assert group_names(teammate) == {"Helpers"}


def test_a_member_with_only_a_membership_sees_the_console(teammate):
    client = logged_in(teammate)
    index = client.get("/admin/").content.decode()
    assert "keine Berechtigung" not in index
    for path in ("/admin/calls_app/call/", "/admin/leads_app/lead/", "/admin/scripts_app/scriptoverride/",
                 "/admin/calls_app/usagecounter/"):
        assert client.get(path).status_code == 200, path


def test_staff_cannot_manage_keys_or_people_but_the_owner_can(owner, teammate):
    assert logged_in(teammate).get("/admin/credentials/apikey/").status_code == 403
    assert logged_in(teammate).get("/admin/tenants/membership/add/").status_code == 403
    assert logged_in(owner).get("/admin/credentials/apikey/").status_code == 200
    assert logged_in(owner).get("/admin/tenants/membership/add/").status_code == 200


def test_the_groups_give_no_platform_settings(owner):
    client = logged_in(owner)
    for path in ("/admin/calls_app/carrier/", "/admin/auth/group/"):
        assert client.get(path).status_code == 403, path
