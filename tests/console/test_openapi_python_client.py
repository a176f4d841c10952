"""A whole client generated from /v2/schema by openapi-python-client (what a developer
runs first): every operation of the document becomes a function, every operation with
a body takes it, and the generated functions answer against the served app (Django's
live server on loopback) with JSON, multipart and binary bodies, a list, a model by
OpenAI's name, the tenant's key and the gateway's token."""
import importlib
import inspect
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.conftest import make_client
from tests.gateway_app.conftest import GATEWAY_TOKEN, SHIPPED, load_document

METHODS = ("get", "post", "put", "patch", "delete")
PACKAGE = "stimmwerk_client"


@pytest.fixture(scope="module")
def document(django_db_blocker):
    with django_db_blocker.unblock():
        return make_client().get("/v2/schema?format=json").json()


@pytest.fixture(scope="module")
def generated(document, tmp_path_factory):
    """The generated package's directory (imported as `stimmwerk_client`)."""
    root = tmp_path_factory.mktemp("generated")
    (root / "schema.json").write_text(json.dumps(document), encoding="utf-8")
    # No post hooks: the generator's formatting (ruff) is not under test.
    (root / "config.json").write_text(json.dumps({"package_name_override": PACKAGE, "post_hooks": []}))
    command = Path(sys.executable).with_name("openapi-python-client")
    result = subprocess.run([str(command), "generate", "--path", str(root / "schema.json"), "--meta", "none",
                             "--config", str(root / "config.json"), "--output-path", str(root / PACKAGE)],
                            capture_output=True, text=True, timeout=120, cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    return root


@pytest.fixture
def client_package(generated, monkeypatch):
    monkeypatch.syspath_prepend(str(generated))
    yield importlib.import_module(PACKAGE)
    for name in [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def operations(document):
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


def endpoint(package, operation_id):
    """The generated module of an operation (api/<tag>/<operation id>.py)."""
    found = list((Path(package.__file__).parent / "api").glob(f"*/{operation_id}.py"))
    assert len(found) == 1, operation_id
    tag = found[0].parent.name
    return importlib.import_module(f"{PACKAGE}.api.{tag}.{operation_id}")


@pytest.mark.slow  # runs the generator
def test_every_operation_is_generated_and_takes_its_body(document, client_package):
    missing, bodiless = [], []
    for path, method, operation in operations(document):
        try:
            module = endpoint(client_package, operation["operationId"])
        except AssertionError:
            missing.append(f"{method.upper()} {path}")
            continue
        if "requestBody" in operation and "body" not in inspect.signature(module.sync_detailed).parameters:
            bodiless.append(f"{method.upper()} {path}")
    assert (missing, bodiless) == ([], [])


@pytest.fixture
def demo_key(live_server, settings):
    settings.GATEWAY_STATIC_TOKEN = GATEWAY_TOKEN
    settings.GATEWAY_MODE = "mock"
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    return re.search(r"API key: (swk_\S+)", out.getvalue()).group(1)


@pytest.mark.slow  # runs the generator
def test_the_generated_functions_answer_against_the_served_app(client_package, live_server, demo_key,
                                                               render_cache_dir):
    load_document(SHIPPED)
    api = client_package.AuthenticatedClient(base_url=live_server.url, token=demo_key, timeout=30)
    gateway = client_package.AuthenticatedClient(base_url=live_server.url, token=GATEWAY_TOKEN, timeout=30)
    models = importlib.import_module(f"{PACKAGE}.models")
    types = importlib.import_module(f"{PACKAGE}.types")

    # A tenant's list, parsed into the generated models.
    calls = endpoint(client_package, "calls_list").sync_detailed(client=api, x_tenant="demo")
    assert calls.status_code == 200 and calls.parsed.calls, calls.content[:300]

    # A multipart upload.
    document = models.KnowledgeFileRequest(file=types.File(payload=io.BytesIO(
        "# Öffnungszeiten\n\nMontag bis Freitag von 8 bis 18 Uhr.".encode()), file_name="zeiten.md",
        mime_type="text/markdown"), title="Öffnungszeiten")
    created = endpoint(client_package, "knowledge_create").sync_detailed(client=api, body=document, x_tenant="demo")
    assert created.status_code == 201 and created.parsed.title == "Öffnungszeiten", created.content[:300]

    # The gateway: the model list, an OpenAI name of a model, a JSON body with standard fields.
    listed = endpoint(client_package, "v1_models_get").sync_detailed(client=gateway)
    assert listed.status_code == 200 and listed.parsed.data[0].id == "auto"
    alias = endpoint(client_package, "v1_models_retrieve").sync_detailed("gpt-4o-mini", client=gateway)
    assert (alias.status_code, alias.parsed.owned_by) == (200, "stimmwerk")
    chat = endpoint(client_package, "v1_chat_completions_create").sync_detailed(
        client=gateway, body=models.ChatCompletionRequest.from_dict(
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "Wann haben Sie geöffnet?"}],
             "top_p": 0.9, "seed": 1}))
    assert chat.status_code == 200, chat.content[:300]
    assert chat.parsed.choices[0].message.content.startswith("Die Praxis ist Montag bis Freitag")

    # A binary answer.
    speech = endpoint(client_package, "v1_audio_speech_create").sync_detailed(
        client=gateway, body=models.SpeechRequest.from_dict({"model": "tts-1", "input": "Guten Tag.", "voice": "alloy",
                                                             "response_format": "wav"}))
    assert speech.status_code == 200 and speech.content.startswith(b"RIFF")
