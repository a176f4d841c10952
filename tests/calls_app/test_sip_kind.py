"""The `sip` kind (calls_app/kinds/sip.py): create_carrier takes its options (the
password sealed, never printed), a registering trunk needs registrar, username and
password, a static one its allowed senders; /health and the admin's connection test
show the registration state the SIP agent wrote."""
import io

import pytest
from django.core.management import CommandError, call_command

from calls_app.carriers import adapter_for
from calls_app.kinds.credentials import credentials_of
from calls_app.kinds.sip import parse_sip_uri, sip_account
from calls_app.models import Carrier
from calls_app.sip_carriers import sip_accounts, sip_registration_note
from console.views import recent_reads

PASSWORD = "geheim-Passwort-42"


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


@pytest.mark.django_db
def test_create_carrier_kind_sip_seals_the_password_and_never_prints_it():
    out = run("create_carrier", "sip1", "--kind", "sip", "--registrar", "sip:sipconnect.sipgate.de",
              "--username", "1234567e0", "--password", PASSWORD, "--transport", "TCP", "--from-domain",
              "sipgate.de")
    assert PASSWORD not in out and "1234567e0" in out
    carrier = Carrier.objects.get(pk="sip1")
    assert PASSWORD not in carrier.credentials_sealed
    account = sip_account(carrier)
    assert (str(account.registrar), account.username, account.password, account.transport, account.domain) == (
        "sip:sipconnect.sipgate.de:5060", "1234567e0", PASSWORD, "tcp", "sipgate.de")
    assert PASSWORD not in repr(account)
    assert [a.carrier_id for a in sip_accounts()] == ["sip1"]

    run("create_carrier", "fritz", "--kind", "sip", "--static", "--allow", "192.168.178.1", "10.0.0.0/8")
    static = sip_account(Carrier.objects.get(pk="fritz"))
    assert static.static and static.allow == ("192.168.178.1", "10.0.0.0/8") and not static.registers


@pytest.mark.django_db
@pytest.mark.parametrize("args, field", [
    (["--registrar", "sip:h.example", "--username", "u"], "password"),
    (["--username", "u", "--password", "p"], "registrar"),
    (["--registrar", "http://h.example", "--username", "u", "--password", "p"], "registrar"),
    (["--registrar", "sip:h.example:70000", "--username", "u", "--password", "p"], "registrar"),
    (["--registrar", "sip:h.example", "--username", "a b", "--password", "p"], "username"),
    (["--registrar", "sip:h.example", "--username", "u", "--password", "p", "--transport", "sctp"], "transport"),
    (["--static"], "allow"),
    (["--static", "--allow", "not a host!"], "allow"),
])
def test_create_carrier_kind_sip_refuses_what_is_missing_or_unfit(args, field):
    with pytest.raises(CommandError, match=field):
        run("create_carrier", "sipx", "--kind", "sip", *args)
    assert not Carrier.objects.filter(pk="sipx").exists()


def test_sip_uris_parse_with_default_ports():
    assert (parse_sip_uri("sip:127.0.0.1:5099").port, parse_sip_uri("sips:tls.example").port) == (5099, 5061)
    with pytest.raises(ValueError):
        parse_sip_uri("sip:")


@pytest.mark.django_db
def test_the_registration_state_shows_in_health_and_the_connection_test(client):
    run("create_carrier", "sip1", "--kind", "sip", "--registrar", "sip:127.0.0.1", "--username", "u",
        "--password", PASSWORD)
    assert client.get("/health").json()["sipCarriers"] == []
    assert not adapter_for("sip1").probe().usable  # the agent has not reported yet
    sip_registration_note(carrier_id="sip1", state="failing", reason="403 Forbidden")
    recent_reads.forget()  # as when /health's second has passed (it reads the database once a second)
    assert client.get("/health").json()["sipCarriers"] == [{"id": "sip1", "state": "failing",
                                                             "reason": "403 Forbidden"}]
    probe = adapter_for("sip1").probe()
    assert not probe.usable and probe.detail == "403 Forbidden"
    sip_registration_note(carrier_id="sip1", state="registered")
    assert adapter_for("sip1").probe().usable
    assert credentials_of(Carrier.objects.get(pk="sip1"))["password"] == PASSWORD


@pytest.mark.django_db
def test_the_admin_shows_the_registration_state_and_never_the_password(client):
    from django.contrib.auth import get_user_model

    run("create_carrier", "sip1", "--kind", "sip", "--registrar", "sip:127.0.0.1", "--username", "u",
        "--password", PASSWORD)
    sip_registration_note(carrier_id="sip1", state="failing", reason="403 Forbidden")
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))
    page = client.get("/admin/calls_app/carrier/sip1/change/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "fehlgeschlagen (403 Forbidden)" in page and "SIP-Passwort" in page and "Registrar" in page
    assert PASSWORD not in page
    listing = client.get("/admin/calls_app/carrier/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "fehlgeschlagen (403 Forbidden)" in listing
    answer = client.post("/admin/calls_app/carrier/", {"action": "probe_connection", "_selected_action": ["sip1"]},
                         follow=True, HTTP_ACCEPT_LANGUAGE="de")
    assert "403 Forbidden" in answer.content.decode()


@pytest.mark.django_db
def test_an_outbound_dial_is_named_by_the_adapter_and_claimed_by_the_agent_once(api_a, settings, tenant_a):
    from calls_app.models import Call
    from calls_app.sip_carriers import sip_dial_claim, sip_dials_due

    settings.VOICE_OUTBOUND_CARRIER = "sip1"
    run("create_carrier", "sip1", "--kind", "sip", "--registrar", "sip:127.0.0.1", "--username", "u",
        "--password", PASSWORD)
    response = api_a.post("/voice/v1/calls", {"to": "+4930222000"}, format="json")
    assert response.status_code == 201, response.content
    call = Call.objects.get(pk=response.json()["id"])
    assert (call.status, call.carrier_call_id) == ("queued", f"sip-out-{call.pk}")
    assert adapter_for("sip1").capabilities.idempotent_dials  # the same dial again names the same call
    (due,) = sip_dials_due(within_sec=60)
    assert (due.call_id, due.to_e164, due.carrier_id) == (call.pk, "+4930222000", "sip1")
    assert sip_dial_claim(dial=due) is True
    assert sip_dial_claim(dial=due) is False  # a second agent, or this one after a restart: no second INVITE
    assert sip_dials_due(within_sec=60) == []
