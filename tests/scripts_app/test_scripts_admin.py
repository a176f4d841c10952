"""Operators edit overrides in the admin, see the findings of the text before it is
saved, and see the effective script of each touchpoint with its source."""
import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from scripts_app.catalog import catalog
from scripts_app.models import ScriptOverride

pytestmark = pytest.mark.django_db

ADD_URL = "/admin/scripts_app/scriptoverride/add/"
EFFECTIVE_URL = "/admin/scripts_app/scriptoverride/effective/"


def admin_client(user):
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=["scripts_app", "tenants"]))
    client = Client()
    client.force_login(user)
    return client


def add(client, tenant, text, **extra):
    return client.post(ADD_URL, {"tenant": tenant.pk, "touchpoint_id": "inbound.greeting", "text": text, **extra})


def test_text_with_findings_is_shown_highlighted_and_not_saved_unconfirmed(owner, tenant_a):
    page = add(admin_client(owner), tenant_a, "Wir rufen Sie zurueck.")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'class="script-finding script-error"' in html and ">zurueck</mark>" in html
    assert ">Wir</mark>" in html
    assert "Schreiben Sie „zurück“" in html  # the rule's message
    assert ScriptOverride.objects.count() == 0


def test_text_with_findings_is_saved_once_confirmed(owner, tenant_a):
    response = add(admin_client(owner), tenant_a, "Wir rufen Sie zurueck.", save_despite_findings="on")
    assert response.status_code == 302
    assert ScriptOverride.objects.get().text == "Wir rufen Sie zurueck."


def test_clean_text_is_saved_directly(owner, tenant_a):
    assert add(admin_client(owner), tenant_a, "Guten Tag, hier ist die Praxis Weber.").status_code == 302
    assert ScriptOverride.objects.get().touchpoint_id == "inbound.greeting"


def test_change_page_shows_the_findings_of_the_saved_text(owner, tenant_a):
    override = ScriptOverride.objects.create(tenant=tenant_a, touchpoint_id="call.hold", text="Danke.\nBitte warten.")
    html = admin_client(owner).get(f"/admin/scripts_app/scriptoverride/{override.pk}/change/").content.decode()
    assert ">Danke.</mark>" in html and "einwortzeile" in html


def test_admin_refuses_empty_text_and_unknown_touchpoints(owner, tenant_a):
    client = admin_client(owner)
    assert add(client, tenant_a, "   ").status_code == 200
    page = client.post(ADD_URL, {"tenant": tenant_a.pk, "touchpoint_id": "nope.nope", "text": "Hallo"})
    assert page.status_code == 200
    assert ScriptOverride.objects.count() == 0


def test_effective_scripts_page_shows_every_touchpoint_with_its_source(owner, tenant_a):
    ScriptOverride.objects.create(tenant=tenant_a, touchpoint_id="call.goodbye", text="Wir sagen tschüss.")
    html = admin_client(owner).get(EFFECTIVE_URL).content.decode()
    for tp in catalog():
        assert f"<code>{tp}</code>" in html
    assert html.count('class="source-tenant"') == 1
    assert html.count('class="source-default"') == len(catalog()) - 1
    assert ">Wir</mark>" in html


def test_member_sees_only_their_tenants_scripts(owner, outsider, tenant_a, tenant_b):
    ScriptOverride.objects.create(tenant=tenant_a, touchpoint_id="call.goodbye", text="Acme sagt tschüss.")
    ScriptOverride.objects.create(tenant=tenant_b, touchpoint_id="call.goodbye", text="Globex sagt tschüss.")
    client = admin_client(outsider)
    assert "Globex sagt" in client.get("/admin/scripts_app/scriptoverride/").content.decode()
    assert "Acme sagt" not in client.get("/admin/scripts_app/scriptoverride/").content.decode()
    page = client.get(EFFECTIVE_URL + "?tenant=acme").content.decode()
    assert "Acme sagt" not in page and "Globex sagt" in page
