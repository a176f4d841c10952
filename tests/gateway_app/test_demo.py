"""`make run` gives the gateway a token: the Makefile writes one into .env, and
seed_demo prints it with a curl line that answers."""
import io
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from django.conf import settings as django_settings
from django.core.management import call_command

from tests.gateway_app.conftest import GATEWAY_TOKEN

PROJECT = Path(django_settings.BASE_DIR)


def test_seed_demo_prints_the_gateway_token_and_a_curl_line_that_answers(gateway, client):
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    text = out.getvalue()
    assert f"  Gateway: {GATEWAY_TOKEN}  " in text
    curl = shlex.split(re.search(r"Try:\s+(curl .*/v1/agent)", text).group(1))
    header, body = curl[curl.index("-H") + 1], curl[curl.index("-d") + 1]
    # As curl -d sends it: labelled as form data.
    response = client.post("/v1/agent", data=body, content_type="application/x-www-form-urlencoded",
                           HTTP_AUTHORIZATION=header.partition(": ")[2])
    assert response.status_code == 200
    assert response.json()["text"].startswith("Die Praxis ist Montag bis Freitag")


def test_seed_demo_says_when_the_gateway_has_no_token(db, settings):
    settings.GATEWAY_STATIC_TOKEN = ""
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    assert "GATEWAY_STATIC_TOKEN is not set" in out.getvalue()


def run_make(tree, target):
    return subprocess.run(["make", "-s", target, "BIN=" + str(Path(django_settings.BASE_DIR) / ".venv" / "bin")],
                          cwd=tree, capture_output=True, text=True, timeout=60)


def test_the_makefile_writes_a_fresh_gateway_token_and_adds_one_to_an_old_env(tmp_path):
    for name in ("Makefile", ".env.example"):
        shutil.copy(PROJECT / name, tmp_path / name)
    first = run_make(tmp_path, "gateway-token")
    assert first.returncode == 0, first.stderr
    tokens = re.findall(r"^GATEWAY_STATIC_TOKEN=(.+)$", (tmp_path / ".env").read_text(), re.MULTILINE)
    assert len(tokens) == 1 and len(tokens[0]) >= 40
    # A .env from before the gateway (its line empty) gets a token, which replaces the empty line.
    (tmp_path / ".env").write_text("SECRET_KEY=x\nGATEWAY_STATIC_TOKEN=\nDEBUG=0\n")
    assert run_make(tmp_path, "gateway-token").returncode == 0
    lines = (tmp_path / ".env").read_text().splitlines()
    assert [line for line in lines if line.startswith("GATEWAY_STATIC_TOKEN=")][0] != "GATEWAY_STATIC_TOKEN="
    assert len([line for line in lines if line.startswith("GATEWAY_STATIC_TOKEN")]) == 1
    before = (tmp_path / ".env").read_text()
    assert run_make(tmp_path, "gateway-token").returncode == 0
    assert (tmp_path / ".env").read_text() == before  # an existing token is kept
