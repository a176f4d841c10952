"""A staff member who is not a superuser sees only their tenants and their data."""
import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from console.assistants.models import Assistant
from console.credentials.models import ApiKey
from console.credentials.services import api_key_create
from console.numbers.models import PhoneNumber
from console.tenants.models import Tenant
from console.tenants.services import membership_add, tenant_create

pytestmark = pytest.mark.django_db

APPS = ["tenants", "credentials", "assistants", "numbers"]


@pytest.fixture
def data(tenant_a, tenant_b):
    a = Assistant.objects.create(tenant=tenant_a, name="Acme-Empfang")
    b = Assistant.objects.create(tenant=tenant_b, name="Globex-Empfang")
    PhoneNumber.objects.create(tenant=tenant_a, e164="+493012345678", label="acme-zentrale", assistant=a)
    PhoneNumber.objects.create(tenant=tenant_b, e164="+494012345678", label="globex-zentrale", assistant=b)
    api_key_create(tenant=tenant_a, name="acme-crm")
    api_key_create(tenant=tenant_b, name="globex-crm")
    return {"a": a, "b": b}


def admin_client(user):
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=APPS))
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("url, mine, foreign", [
    ("/admin/tenants/tenant/", "acme", "globex"),
    ("/admin/assistants/assistant/", "Acme-Empfang", "Globex-Empfang"),
    ("/admin/numbers/phonenumber/", "acme-zentrale", "globex-zentrale"),
    ("/admin/credentials/apikey/", "acme-crm", "globex-crm"),
])
def test_member_sees_only_own_tenants_objects(owner, data, url, mine, foreign):
    page = admin_client(owner).get(url).content.decode()
    assert mine in page
    assert foreign not in page


def test_member_gets_404_for_a_foreign_objects_page(owner, data):
    client = admin_client(owner)
    assert client.get(f"/admin/assistants/assistant/{data['b'].pk}/change/").status_code == 302  # "does not exist" redirect
    assert client.get(f"/admin/assistants/assistant/{data['a'].pk}/change/").status_code == 200
    tenant_b = Tenant.objects.get(slug="globex")
    assert client.get(f"/admin/tenants/tenant/{tenant_b.pk}/change/").status_code == 302


def test_member_can_only_pick_own_tenant_in_forms(owner, data):
    page = admin_client(owner).get("/admin/assistants/assistant/add/").content.decode()
    assert "Acme (acme)" in page
    assert "Globex (globex)" not in page


def test_superuser_sees_all_tenants(data, django_user_model):
    root = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(root)
    page = client.get("/admin/assistants/assistant/").content.decode()
    assert "Acme-Empfang" in page and "Globex-Empfang" in page


def test_admin_creates_an_api_key_and_shows_it_once(owner, tenant_a):
    client = admin_client(owner)
    response = client.post("/admin/credentials/apikey/add/", {"tenant": tenant_a.pk, "name": "from admin"})
    assert response.status_code == 200
    api_key = ApiKey.objects.get(name="from admin")
    raw_key = response.context["raw_key"]
    assert raw_key in response.content.decode()
    assert raw_key.startswith(api_key.prefix + "_")
    # Stored only as a hash; the list and detail pages never show it again.
    assert raw_key not in (api_key.key_hash, api_key.prefix)
    assert raw_key not in client.get("/admin/credentials/apikey/").content.decode()
    assert raw_key not in client.get(f"/admin/credentials/apikey/{api_key.pk}/change/").content.decode()


def test_member_cannot_create_a_key_for_a_foreign_tenant(owner, tenant_b):
    response = admin_client(owner).post("/admin/credentials/apikey/add/", {"tenant": tenant_b.pk, "name": "sneaky"})
    assert response.status_code == 200
    assert not ApiKey.objects.filter(name="sneaky").exists()
    assert "Bitte eine gültige Auswahl treffen" in response.content.decode()


def test_admin_revokes_keys(owner, data):
    api_key = ApiKey.objects.get(name="acme-crm")
    admin_client(owner).post("/admin/credentials/apikey/", {"action": "revoke", "_selected_action": [api_key.pk]})
    api_key.refresh_from_db()
    assert api_key.revoked_at is not None


def test_admin_number_form_normalises_to_e164(owner, tenant_a):
    response = admin_client(owner).post("/admin/numbers/phonenumber/add/", {
        "tenant": tenant_a.pk, "e164": "030 98765432", "label": "admin", "assistant": ""})
    assert response.status_code == 302
    assert PhoneNumber.objects.get(label="admin").e164 == "+493098765432"


def test_admin_number_form_refuses_a_number_another_tenant_holds(owner, data):
    """The admin asks number_create's own check (number_check), in German."""
    response = admin_client(owner).post("/admin/numbers/phonenumber/add/", {
        "tenant": Tenant.objects.get(slug="acme").pk, "e164": "040 12345678", "label": "mine", "assistant": ""})
    assert response.status_code == 200 and "bereits vergeben" in response.content.decode()
    assert not PhoneNumber.objects.filter(label="mine").exists()


def test_admin_number_form_refuses_an_assistant_of_another_of_the_members_tenants(owner, data):
    initech = tenant_create(slug="initech", name="Initech")
    membership_add(tenant=initech, user=owner)
    response = admin_client(owner).post("/admin/numbers/phonenumber/add/", {
        "tenant": initech.pk, "e164": "030 98765432", "label": "initech", "assistant": data["a"].pk})
    assert response.status_code == 200 and "gehört zu einem anderen Mandanten" in response.content.decode()
    assert not PhoneNumber.objects.filter(label="initech").exists()


def test_admin_number_change_keeps_the_number_and_changes_label_and_assistant(owner, data):
    number = PhoneNumber.objects.get(label="acme-zentrale")
    other = Assistant.objects.create(tenant=number.tenant, name="Acme-Nacht")
    client = admin_client(owner)
    assert 'name="e164"' not in client.get(f"/admin/numbers/phonenumber/{number.pk}/change/").content.decode()
    response = client.post(f"/admin/numbers/phonenumber/{number.pk}/change/", {
        "e164": "+493099999999", "label": "nachts", "assistant": other.pk})
    assert response.status_code == 302, response.content
    number.refresh_from_db()
    assert (number.e164, number.label, number.assistant_id) == ("+493012345678", "nachts", other.pk)


def test_member_sees_only_memberships_of_own_tenants(owner, teammate, outsider):
    page = admin_client(owner).get("/admin/tenants/membership/").content.decode()
    assert "olga-owner" in page and "tom-teammate" in page
    assert "otto-outsider" not in page


# --- Filters, autocomplete and lookups offer only what the member may see ----------------

def test_tenant_filter_of_the_leads_list_offers_only_own_tenants(owner, tenant_b):
    # A member of two tenants, so that the filter has something to offer.
    membership_add(tenant=tenant_create(slug="initech", name="Initech"), user=owner)
    owner.user_permissions.set(Permission.objects.filter(content_type__app_label="leads_app"))
    client = Client()
    client.force_login(owner)

    page = client.get("/admin/leads_app/lead/").content.decode()

    assert "Acme (acme)" in page and "Initech (initech)" in page
    assert "Globex" not in page and f"tenant__id__exact={tenant_b.pk}" not in page


def test_tenant_filter_of_a_superuser_offers_every_tenant(tenant_a, tenant_b, django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.com", "pw"))

    page = client.get("/admin/leads_app/lead/").content.decode()

    assert "Acme (acme)" in page and "Globex (globex)" in page


def autocomplete(client, app_label, model_name, field_name, term=""):
    response = client.get("/admin/autocomplete/", {"app_label": app_label, "model_name": model_name,
                                                   "field_name": field_name, "term": term})
    assert response.status_code == 200, response.content
    return {item["text"] for item in response.json()["results"]}


def test_tenant_autocomplete_finds_only_own_tenants(owner, tenant_b):
    client = admin_client(owner)

    assert autocomplete(client, "assistants", "assistant", "tenant") == {"Acme (acme)"}
    assert autocomplete(client, "assistants", "assistant", "tenant", "glob") == set()


def test_user_lookup_finds_only_members_of_own_tenants(owner, teammate, outsider):
    client = admin_client(owner)
    owner.user_permissions.add(Permission.objects.get(codename="view_user"))

    assert autocomplete(client, "tenants", "membership", "user") == {"olga-owner", "tom-teammate"}
    assert autocomplete(client, "tenants", "membership", "user", "otto") == set()
    assert autocomplete(client, "credentials", "apikey", "created_by", "example.com") == {"olga-owner", "tom-teammate"}


def test_user_list_shows_only_members_of_own_tenants(owner, teammate, outsider):
    client = admin_client(owner)
    owner.user_permissions.add(Permission.objects.get(codename="view_user"))

    page = client.get("/admin/auth/user/").content.decode()

    assert "tom-teammate" in page and "otto-outsider" not in page and "otto-outsider@example.com" not in page
    assert client.get(f"/admin/auth/user/{outsider.pk}/change/").status_code == 302  # "does not exist"


def test_member_cannot_give_anyone_rights_or_a_password(owner, teammate):
    client = admin_client(owner)
    owner.user_permissions.add(*Permission.objects.filter(content_type__app_label="auth"))

    response = client.post(f"/admin/auth/user/{owner.pk}/change/", {
        "username": "olga-owner", "is_active": "on", "is_staff": "on", "is_superuser": "on",
        "date_joined_0": "2025-01-01", "date_joined_1": "00:00:00"})
    assert response.status_code == 403
    assert client.post(f"/admin/auth/user/{teammate.pk}/password/",
                       {"password1": "x-Very-long-1", "password2": "x-Very-long-1"}).status_code == 403
    assert client.get("/admin/auth/group/").status_code == 403
    owner.refresh_from_db()
    teammate.refresh_from_db()
    assert not owner.is_superuser and teammate.check_password("pw")


# --- Members are added by e-mail ------------------------------------------------------------

def add_member(client, tenant, email, role="member"):
    return client.post("/admin/tenants/membership/add/", {"tenant": tenant.pk, "email": email, "role": role})


def test_member_invites_a_new_person_by_email(owner, tenant_a, django_user_model):
    response = add_member(admin_client(owner), tenant_a, "Neu@Example.com")

    assert response.status_code == 302, response.content.decode()
    invited = django_user_model.objects.get(email="Neu@example.com")
    assert not invited.is_active and not invited.has_usable_password()
    assert invited.memberships.get().tenant == tenant_a


def test_an_address_of_an_existing_account_adds_that_account(owner, tenant_a, outsider, django_user_model):
    response = add_member(admin_client(owner), tenant_a, "OTTO-outsider@example.com")

    assert response.status_code == 302
    assert django_user_model.objects.filter(email__iexact="otto-outsider@example.com").count() == 1
    assert outsider.memberships.filter(tenant=tenant_a).exists()


def test_adding_a_member_twice_is_refused(owner, teammate, tenant_a):
    response = add_member(admin_client(owner), tenant_a, "tom-teammate@example.com")

    assert response.status_code == 200
    assert "ist bereits Mitglied von Acme" in response.content.decode()


def test_member_cannot_add_people_to_a_foreign_tenant(owner, tenant_b, django_user_model):
    response = add_member(admin_client(owner), tenant_b, "spy@example.com")

    assert response.status_code == 200 and "Bitte eine gültige Auswahl treffen" in response.content.decode()
    assert not django_user_model.objects.filter(email="spy@example.com").exists()


def test_membership_form_offers_no_list_of_accounts(owner, outsider):
    page = admin_client(owner).get("/admin/tenants/membership/add/").content.decode()

    assert 'name="email"' in page and "otto-outsider" not in page


# --- Tenant origins -------------------------------------------------------------------------

def tenant_change_data(client, tenant):
    """The POST data of the tenant's change page as it is now (main form and inlines)."""
    response = client.get(f"/admin/tenants/tenant/{tenant.pk}/change/")
    forms = [response.context["adminform"].form]
    data = {}
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        forms += list(formset.forms)
        data.update({f"{formset.prefix}-{name}": value for name, value in formset.management_form.initial.items()})
    for form in forms:
        for name, field in form.fields.items():
            value = form.initial.get(name, field.initial)
            if value is None or field.disabled or value is False:
                continue
            data[form.add_prefix(name)] = "on" if value is True else getattr(value, "pk", value)
    return data


def post_origins(client, tenant, *origins):
    data = tenant_change_data(client, tenant)
    existing = int(data["origins-TOTAL_FORMS"])
    for offset, origin in enumerate(origins):
        data[f"origins-{existing + offset}-origin"] = origin
    data["origins-TOTAL_FORMS"] = existing + len(origins)
    return client.post(f"/admin/tenants/tenant/{tenant.pk}/change/", data)


@pytest.mark.parametrize("origin", ["*", "javascript:alert(1)", "null", "https://shop.example/path",
                                    "https://user@shop.example", "ftp://shop.example", "https://shop .example"])
def test_origins_inline_refuses_what_is_not_an_origin(owner, tenant_a, origin):
    response = post_origins(admin_client(owner), tenant_a, origin)

    assert response.status_code == 200
    assert "ist keine Web-Herkunft" in response.content.decode()
    assert list(tenant_a.origins.values_list("origin", flat=True)) == ["https://acme.example"]


def test_origins_inline_stores_origins_as_browsers_send_them(owner, tenant_a):
    response = post_origins(admin_client(owner), tenant_a, "HTTPS://Shop.Example:443/", "http://[::1]:8000",
                            "https://bücher.example")

    assert response.status_code == 302, response.context["inline_admin_formsets"][1].formset.errors
    assert set(tenant_a.origins.values_list("origin", flat=True)) == {
        "https://acme.example", "https://shop.example", "http://[::1]:8000", "https://xn--bcher-kva.example"}


def test_tenant_page_adds_a_member_by_email_too(owner, teammate, tenant_a, django_user_model):
    client = admin_client(owner)
    data = tenant_change_data(client, tenant_a)
    rows = int(data["memberships-TOTAL_FORMS"])
    data.update({f"memberships-{rows}-email": "kollegin@example.com", f"memberships-{rows}-role": "member",
                 "memberships-TOTAL_FORMS": rows + 1})

    response = client.post(f"/admin/tenants/tenant/{tenant_a.pk}/change/", data)

    assert response.status_code == 302, response.context["inline_admin_formsets"][2].formset.errors
    invited = django_user_model.objects.get(email="kollegin@example.com")
    assert not invited.is_active and invited.memberships.get().tenant == tenant_a
    # The existing members are untouched: their person cannot be changed on this page.
    assert set(tenant_a.memberships.values_list("user__username", flat=True)) == {
        "olga-owner", "tom-teammate", "kollegin@example.com"}
