"""The tenant's SMS provider in the German admin: saved through the service (the token
sealed, never shown), its problems shown at the fields in German."""
import pytest
from django.test import Client

from calls_app.signing import unseal
from messaging_app.models import MessagingSettings

pytestmark = pytest.mark.django_db
ADD = "/admin/messaging_app/messagingsettings/add/"


def form(tenant, **fields):
    return {"tenant": tenant.pk, "provider": "", "sipgate_token_id": "", "sipgate_token": "", "sipgate_sms_id": "",
            "twilio_carrier": "", "sender_e164": "", "webhook_url": "", "templates": "{}", **fields}


def test_the_owner_sets_sipgate_in_german_and_the_token_is_sealed(owner, tenant_a):
    client = Client()
    client.force_login(owner)
    page = client.get(ADD).content.decode()
    assert "SMS-Einstellungen" in page and "sipgate-Token" in page and "Keiner (keine SMS)" in page
    refused = client.post(ADD, form(tenant_a, provider="sipgate", sipgate_token_id="token-X")).content.decode()
    assert "sipgate braucht die Token-ID und das Token." in refused and not MessagingSettings.objects.exists()
    saved = client.post(ADD, form(tenant_a, provider="sipgate", sipgate_token_id="token-X",
                                  sipgate_token="geheim-123", sipgate_sms_id="s0"))
    assert saved.status_code == 302, saved.content.decode()[-2000:]
    config = MessagingSettings.objects.get(tenant=tenant_a)
    assert config.provider == "sipgate" and unseal(config.sipgate_token_sealed) == "geheim-123"
    change = client.get(f"/admin/messaging_app/messagingsettings/{config.pk}/change/").content.decode()
    assert "geheim-123" not in change and "sealed" not in change


def test_a_sender_that_is_not_the_tenants_number_is_refused_in_german(owner, tenant_a):
    from calls_app.models import Carrier

    Carrier.objects.create(id="tw-admin", kind="twilio", secret_nonce="n")
    client = Client()
    client.force_login(owner)
    refused = client.post(ADD, form(tenant_a, provider="twilio", twilio_carrier="tw-admin",
                                    sender_e164="+493099999999")).content.decode()
    assert "Der Absender muss eine der eigenen Nummern des Mandanten sein." in refused


def test_the_sms_list_is_german(owner, tenant_a):
    client = Client()
    client.force_login(owner)
    page = client.get("/admin/messaging_app/sms/").content.decode()
    assert "Empfänger (E.164)" in page or "0 SMS" in page


def test_the_default_is_the_calls_own_carrier_in_german(owner, tenant_a):
    client = Client()
    client.force_login(owner)
    page = client.get(ADD).content.decode()
    assert '<option value="carrier" selected>Der Telefonieanbieter des Anrufs (wo er SMS senden kann: Twilio)' in page
    assert "Standard: Der Telefonieanbieter jedes Anrufs sendet dessen SMS" in page
    saved = client.post(ADD, form(tenant_a, provider="carrier"))
    assert saved.status_code == 302, saved.content.decode()[-2000:]
    assert MessagingSettings.objects.get(tenant=tenant_a).provider == "carrier"
