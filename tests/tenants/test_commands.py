"""The operator's management commands (CONTRACT §8)."""
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from console.assistants.models import Assistant
from console.credentials.models import ApiKey
from console.credentials.services import api_key_authenticate
from console.numbers.models import PhoneNumber
from console.tenants.models import Tenant

pytestmark = pytest.mark.django_db
PROJECT = Path(__file__).resolve().parents[2]


def run(*args):
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_tenant_with_hosts_and_origins(db):
    run("create_tenant", "acme", "--name", "Acme GmbH", "--minute-cap", "10",
        "--host", "acme.localhost", "--host", "www.acme.example", "--origin", "https://Acme.example:443/")
    tenant = Tenant.objects.get(slug="acme")
    assert (tenant.name, tenant.minute_cap, tenant.max_call_minutes, tenant.time_zone) == ("Acme GmbH", 10, 10, "Europe/Berlin")
    assert (tenant.recording_enabled, tenant.transcription_enabled) == (False, True)
    assert sorted(tenant.hosts.values_list("host", flat=True)) == ["acme.localhost", "www.acme.example"]
    assert list(tenant.origins.values_list("origin", flat=True)) == ["https://acme.example"]


@pytest.mark.parametrize("args, message", [
    (["Bad Slug", "--name", "x"], "slug"),
    (["-x", "--name", "x"], "slug"),
    (["ok-slug", "--name", "x", "--origin", "ftp://x"], "origin"),
    (["ok-slug", "--name", "x", "--origin", "https://x.example/path"], "origin"),
    (["ok-slug", "--name", "x", "--host", "http://x.example"], "host"),
    (["ok-slug", "--name", "x", "--time-zone", "Mars/Olympus"], "time_zone"),
    (["ok-slug", "--name", "x", "--minute-cap", "-1"], "minute-cap"),
])
def test_create_tenant_rejects_bad_input_and_stores_nothing(db, args, message):
    with pytest.raises(CommandError, match=message):
        run("create_tenant", *args)
    assert not Tenant.objects.exists()


def test_create_tenant_twice_is_an_error(tenant_a):
    with pytest.raises(CommandError, match="exists"):
        run("create_tenant", "acme", "--name", "Again")


def test_host_of_another_tenant_is_refused(tenant_a):
    with pytest.raises(CommandError, match="host"):
        run("create_tenant", "other", "--name", "Other", "--host", "acme.localhost")
    assert not Tenant.objects.filter(slug="other").exists()


def test_create_api_key_prints_the_key_alone_on_the_last_line(tenant_a):
    out = run("create_api_key", "acme")
    last = out.strip().splitlines()[-1]
    assert re.fullmatch(r"[A-Za-z0-9_\-]{40,}", last)
    assert api_key_authenticate(raw_key=last).tenant == tenant_a


def test_create_api_key_for_unknown_tenant_fails(db):
    with pytest.raises(CommandError, match="No tenant"):
        run("create_api_key", "nope")
    assert not ApiKey.objects.exists()


def test_seed_demo_is_idempotent_and_its_key_works(client):
    first = run("seed_demo")
    counts = (Tenant.objects.count(), Assistant.objects.count(), PhoneNumber.objects.count(), ApiKey.objects.count())
    second = run("seed_demo")
    assert counts == (Tenant.objects.count(), Assistant.objects.count(), PhoneNumber.objects.count(),
                      ApiKey.objects.count())
    key = re.search(r"API key: (\S+)", first).group(1)
    assert key == re.search(r"API key: (\S+)", second).group(1)
    response = client.get("/v2/assistants", HTTP_AUTHORIZATION=f"Bearer {key}", HTTP_X_TENANT="demo")
    assert len(response.json()["assistants"]) == 2
    assert "password" in first and "curl" in first


def test_missing_secret_key_without_debug_fails_at_start(tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in ("SECRET_KEY", "DEBUG")}
    # ENV_FILE points away from a developer's .env, which would supply a key.
    env.update(DJANGO_SETTINGS_MODULE="console.settings", DEBUG="0", ENV_FILE=str(tmp_path / "none.env"))
    result = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=PROJECT, env=env,
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


def test_seed_demo_prints_the_practice_owners_login_first_and_the_operators_second(client):
    printed = run("seed_demo")
    logins = re.findall(r"user (\S+)\s+password (\S+)", printed)
    assert [user for user, _ in logins] == ["praxis", "operator"]
    (owner, owner_password), (operator, operator_password) = logins
    assert client.login(username=owner, password=owner_password)
    dashboard = client.get("/admin/")
    assert dashboard.status_code == 200
    page = dashboard.content.decode()
    # The practice sees its own sections, not the platform's (the registry, the tenants).
    assert "/admin/assistants/assistant/" in page
    assert "/admin/registry_app/" not in page and "/admin/tenants/tenant/" not in page
    client.logout()
    assert client.login(username=operator, password=operator_password)
    assert "/admin/registry_app/" in client.get("/admin/").content.decode()


def test_the_root_leads_to_the_admins_login(client):
    root = client.get("/")
    assert root.status_code == 302 and root["Location"] == "/admin/"
    assert client.get("/admin/", follow=True).redirect_chain[-1][0].startswith("/admin/login/")


def test_the_practice_reaches_its_own_settings_from_the_dashboard(client, owner, tenant_a):
    client.force_login(owner)
    page = client.get("/admin/").content.decode()
    assert "Einstellungen der Praxis" in page
    settings = client.get("/admin/practice-settings/")
    assert settings.status_code == 302 and settings["Location"] == f"/admin/tenants/tenant/{tenant_a.pk}/change/"
    assert client.get(settings["Location"]).status_code == 200


def test_the_practice_sees_which_number_reaches_which_assistant(client):
    printed = run("seed_demo")
    owner, password = re.findall(r"user (\S+)\s+password (\S+)", printed)[0]
    assert client.login(username=owner, password=password)
    page = client.get("/admin/").content.decode()
    assert "Ihre Rufnummern" in page
    for number in PhoneNumber.objects.filter(tenant__slug="demo").select_related("assistant"):
        assert f">{number.assistant.name}</a></td></tr>" in page
