"""A carrier is one declaration (calls_app/kinds, docs/architecture.md): its kind is
checked against the registry, its credentials are one sealed JSON object that
create_carrier and the admin fill from the kind's form (a secret never shown back),
the migration moved the old Twilio columns into it, and its adapter says what it can
do through declared capabilities."""
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from calls_app.carriers import SimCarrierAdapter, adapter_for
from calls_app.kinds import KINDS, transports
from calls_app.kinds.credentials import credentials_of
from calls_app.kinds.twilio import TwilioCarrierAdapter
from calls_app.models import Carrier
from calls_app.services import carrier_create
from calls_app.signing import seal, unseal
from console.errors import ValidationFailed

ACCOUNT, TOKEN = "AC" + "1" * 32, "the-auth-token-1234"


def run(*args):
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_a_kind_is_checked_against_the_registry_not_a_choices_list():
    assert {"signed-webhook", "twilio", "asterisk"} <= set(KINDS)
    assert {"web", "twilio", "audiosocket", "sip"} == set(transports())
    with pytest.raises(ValidationFailed) as refused:
        carrier_create(carrier_id="x1", kind="carrier-pigeon")
    assert "kind" in refused.value.details
    carrier = Carrier(id="x2", kind="carrier-pigeon", secret_nonce="n")
    with pytest.raises(ValidationError) as invalid:
        carrier.full_clean()
    assert "kind" in invalid.value.message_dict
    assert not Carrier._meta.get_field("kind").choices


@pytest.mark.django_db
def test_twilio_credentials_are_one_sealed_object_checked_by_the_kind():
    carrier, _ = carrier_create(carrier_id="tw9", kind="twilio",
                                credentials={"account_sid": ACCOUNT, "auth_token": TOKEN})
    stored = Carrier.objects.values_list("credentials_sealed", flat=True).get(pk="tw9")
    assert TOKEN not in stored and ACCOUNT not in stored
    assert json.loads(unseal(stored)) == {"account_sid": ACCOUNT, "auth_token": TOKEN,
                                          "api_base": "https://api.twilio.com"}
    assert credentials_of(carrier)["auth_token"] == TOKEN
    with pytest.raises(ValidationFailed) as missing:
        carrier_create(carrier_id="tw8", kind="twilio", credentials={"account_sid": ACCOUNT})
    assert "auth_token" in missing.value.details
    with pytest.raises(ValidationFailed) as stray:
        carrier_create(carrier_id="as8", kind="asterisk", credentials={"auth_token": TOKEN})
    assert "auth_token" in stray.value.details
    with pytest.raises(ValidationFailed) as bad_base:
        carrier_create(carrier_id="tw7", kind="twilio",
                       credentials={"account_sid": ACCOUNT, "auth_token": TOKEN, "api_base": "ftp://x"})
    assert "api_base" in bad_base.value.details


@pytest.mark.django_db
def test_adapters_declare_what_they_can_do():
    carrier, _ = carrier_create(carrier_id="tw9", kind="twilio",
                                credentials={"account_sid": ACCOUNT, "auth_token": TOKEN})
    twilio = adapter_for("tw9")
    assert isinstance(twilio, TwilioCarrierAdapter) and twilio.carrier == carrier
    assert (twilio.capabilities.transfer, twilio.capabilities.machine_detection,
            twilio.capabilities.idempotent_dials) == (True, True, False)
    assert SimCarrierAdapter.capabilities.idempotent_dials and not SimCarrierAdapter.capabilities.transfer


@pytest.mark.django_db
def test_create_carrier_takes_the_kinds_credential_options_and_never_prints_the_token():
    out = run("create_carrier", "tw9", "--kind", "twilio", "--account-sid", ACCOUNT, "--auth-token", TOKEN)
    assert TOKEN not in out and ACCOUNT in out and "/voice/twilio/tw9/incoming" in out
    out = run("create_carrier", "tw9", "--rotate", "--auth-token", "a-new-token-5678")
    assert "a-new-token-5678" not in out
    carrier = Carrier.objects.get(pk="tw9")
    assert credentials_of(carrier) == {"account_sid": ACCOUNT, "auth_token": "a-new-token-5678",
                                       "api_base": "https://api.twilio.com"}
    with pytest.raises(CommandError, match="--account-sid"):
        run("create_carrier", "tw8", "--kind", "twilio", "--auth-token", TOKEN)
    with pytest.raises(CommandError, match="auth_token"):
        run("create_carrier", "as1", "--kind", "asterisk", "--auth-token", TOKEN)


@pytest.mark.django_db
def test_the_admin_renders_the_kinds_form_keeps_a_secret_unseen_and_tests_the_connection(client, fake_twilio):
    carrier_create(carrier_id="tw9", kind="twilio",
                   credentials={"account_sid": ACCOUNT, "auth_token": TOKEN, "api_base": fake_twilio.url})
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))
    page = client.get("/admin/calls_app/carrier/tw9/change/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Konto-SID" in page and ACCOUNT in page and "Auth-Token" in page
    assert TOKEN not in page
    form = {"name": "Twilio", "caller_id": "", "account_sid": ACCOUNT, "auth_token": "", "api_base": fake_twilio.url}
    assert client.post("/admin/calls_app/carrier/tw9/change/", form).status_code == 302
    assert credentials_of(Carrier.objects.get(pk="tw9"))["auth_token"] == TOKEN  # empty: the stored one stays
    form["auth_token"] = "rotated-token-42"
    assert client.post("/admin/calls_app/carrier/tw9/change/", form).status_code == 302
    assert credentials_of(Carrier.objects.get(pk="tw9"))["auth_token"] == "rotated-token-42"

    answer = client.post("/admin/calls_app/carrier/", {"action": "probe_connection", "_selected_action": ["tw9"]},
                         follow=True, HTTP_ACCEPT_LANGUAGE="de")
    assert "Die Verbindung zu tw9 steht." in answer.content.decode()
    probe = fake_twilio.requests[-1]
    assert probe["path"] == f"/2010-04-01/Accounts/{ACCOUNT}.json" and probe["method"] == "GET"
    fake_twilio.fail = (401, {"message": "Authenticate"})
    answer = client.post("/admin/calls_app/carrier/", {"action": "probe_connection", "_selected_action": ["tw9"]},
                         follow=True, HTTP_ACCEPT_LANGUAGE="de")
    assert "Keine Verbindung zu tw9 (401 Authenticate)." in answer.content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_the_twilio_columns_into_the_sealed_object_and_back():
    executor = MigrationExecutor(connection)
    before, after = [("calls_app", "0012_turn_latency")], [("calls_app", "0013_carrier_credentials_sealed_as_one_json")]
    try:
        executor.migrate(before)
        old = executor.loader.project_state(before).apps.get_model("calls_app", "Carrier")
        old.objects.create(id="tw1", kind="twilio", secret_nonce="n", account_sid=ACCOUNT, api_base="http://x.test",
                           auth_token_sealed=seal(TOKEN))
        old.objects.create(id="hook1", kind="signed-webhook", secret_nonce="m")
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        new = executor.loader.project_state(after).apps.get_model("calls_app", "Carrier")
        assert json.loads(unseal(new.objects.get(pk="tw1").credentials_sealed)) == {
            "account_sid": ACCOUNT, "auth_token": TOKEN, "api_base": "http://x.test"}
        assert new.objects.get(pk="hook1").credentials_sealed == ""
        executor = MigrationExecutor(connection)
        executor.migrate(before)
        back = executor.loader.project_state(before).apps.get_model("calls_app", "Carrier").objects.get(pk="tw1")
        assert (back.account_sid, back.api_base, unseal(back.auth_token_sealed)) == (ACCOUNT, "http://x.test", TOKEN)
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db
def test_the_twilio_adapter_hangs_up_and_hands_over_through_the_calls_resource(fake_twilio):
    carrier_create(carrier_id="tw9", kind="twilio",
                   credentials={"account_sid": ACCOUNT, "auth_token": TOKEN, "api_base": fake_twilio.url})
    adapter = adapter_for("tw9")
    adapter.hang_up(carrier_call_id="CA42")
    adapter.transfer(carrier_call_id="CA42", target="+4930123456")
    hang_up, transfer = fake_twilio.updates
    assert hang_up == {"sid": "CA42", "form": {"Status": "completed"}}
    assert "<Dial>+4930123456</Dial>" in transfer["form"]["Twiml"]
    assert fake_twilio.requests[0]["path"] == f"/2010-04-01/Accounts/{ACCOUNT}/Calls/CA42.json"


@pytest.mark.django_db
def test_a_new_kind_is_one_declaration_without_a_migration(monkeypatch):
    """A kind added to the registry is a carrier kind at once: created with its own
    credentials form, valid on the model, its transport valid on agent sessions."""
    from agent_app.models import known_transport
    from calls_app.kinds.base import CarrierKind, CredentialField

    trunk = CarrierKind(name="trunk", label="Testanlage", transport="trunk", credentials=(
        CredentialField("registrar", "Registrar", clean=lambda value: value.lower()),
        CredentialField("password", "Passwort", secret=True)))
    monkeypatch.setitem(KINDS, "trunk", trunk)
    carrier, _ = carrier_create(carrier_id="tr1", kind="trunk",
                                credentials={"registrar": "SIP:Example.DE", "password": "geheim"})
    carrier.full_clean()
    assert credentials_of(carrier) == {"registrar": "sip:example.de", "password": "geheim"}
    known_transport("trunk")
    with pytest.raises(ValidationError):
        known_transport("carrier-pigeon")
