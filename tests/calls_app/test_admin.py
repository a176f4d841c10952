import pytest
from django.contrib.auth import get_user_model

from calls_app.models import Call, Carrier

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser_client(client):
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))
    return client


def test_call_page_shows_the_transcript_as_a_conversation(superuser_client, carrier_client, number_a):
    for event in carrier_client.inbound_call("CA1"):
        carrier_client.send(event)
    call = Call.objects.get()
    page = superuser_client.get(f"/admin/calls_app/call/{call.pk}/change/").content.decode()
    assert "Guten Tag!" in page and "Tastatureingabe: 1" in page and 'class="transcript-line transcript-system"' in page
    assert "calls_app/admin.css" in page
    assert "2:05" in page  # duration


def test_calls_are_read_only_in_the_admin(superuser_client, carrier_client, number_a):
    carrier_client.post("call.started", {"carrierCallId": "CA2", "direction": "inbound", "from": "+491711234567",
                                         "to": number_a.e164})
    call = Call.objects.get()
    assert superuser_client.get("/admin/calls_app/call/add/").status_code == 403
    assert superuser_client.post(f"/admin/calls_app/call/{call.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Call.objects.exists()


def test_usage_list_is_shown_per_tenant(superuser_client, carrier_client, number_a):
    for event in carrier_client.inbound_call("CA3"):
        carrier_client.send(event)
    page = superuser_client.get("/admin/calls_app/usagecounter/").content.decode()
    assert "acme" in page.lower()


def test_staff_see_only_calls_of_their_tenants(client, outsider, carrier_client, number_a):
    outsider.is_superuser = False
    from django.contrib.auth.models import Permission
    outsider.user_permissions.add(Permission.objects.get(codename="view_call"))
    carrier_client.post("call.started", {"carrierCallId": "CA4", "direction": "inbound", "from": "+491711234567",
                                         "to": number_a.e164})
    client.force_login(outsider)
    page = client.get("/admin/calls_app/call/").content.decode()
    assert Call.objects.get().pk not in page


def test_carriers_are_for_superusers_only(client, owner):
    from django.contrib.auth.models import Permission

    Carrier.objects.create(id="sipgate", name="Sipgate", secret_nonce="n")
    owner.user_permissions.set(Permission.objects.filter(content_type__app_label="calls_app"))
    client.force_login(owner)

    assert client.get("/admin/calls_app/carrier/").status_code == 403
    assert client.get("/admin/calls_app/carrier/sipgate/change/").status_code == 403
    assert client.post("/admin/calls_app/carrier/sipgate/change/", {"name": "x", "caller_id": "+491"}).status_code == 403
    assert "calls_app/carrier" not in client.get("/admin/").content.decode()
    assert Carrier.objects.get().caller_id == ""


def test_carrier_caller_id_is_stored_as_e164(superuser_client):
    Carrier.objects.create(id="sipgate", name="Sipgate", secret_nonce="n")

    response = superuser_client.post("/admin/calls_app/carrier/sipgate/change/",
                                     {"name": "Sipgate", "caller_id": "030 1234567"})

    assert response.status_code == 302
    assert Carrier.objects.get().caller_id == "+49301234567"


@pytest.mark.parametrize("caller_id", ["12", "+49 30 abc", "<script>", "+999999999999999"])
def test_carrier_caller_id_that_is_no_number_is_refused(superuser_client, caller_id):
    Carrier.objects.create(id="sipgate", name="Sipgate", secret_nonce="n", caller_id="+49301234567")

    response = superuser_client.post("/admin/calls_app/carrier/sipgate/change/",
                                     {"name": "Sipgate", "caller_id": caller_id})

    assert response.status_code == 200 and response.context["adminform"].form.errors["caller_id"]
    assert Carrier.objects.get().caller_id == "+49301234567"
