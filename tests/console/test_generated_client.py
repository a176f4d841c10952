"""A client generated from /v2/schema (datamodel-code-generator, pydantic models)
parses every list response of the demo tenant: the document describes the bodies
as served, and models that forbid unknown keys catch a field it forgets."""
import importlib.util
import io
import json
import re
import sys

import pytest
from datamodel_code_generator import DataModelType, InputFileType, generate
from datamodel_code_generator.format import Formatter
from django.core.management import call_command

from tests.conftest import make_client

# The list operations: path → the key of its envelope.
LISTS = {
    "/v2/calls": "calls", "/v2/leads": "leads", "/v2/assistants": "assistants", "/v2/numbers": "numbers",
    "/v2/audio/scripts": "scripts", "/v2/privacy/exports": "exports", "/v2/privacy/erasures": "erasures",
    "/v2/webhooks": "webhooks",
}


@pytest.fixture
def demo_client(db):
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    key = re.search(r"API key: (swk_\S+)", out.getvalue()).group(1)
    return make_client(key, "demo")


@pytest.fixture
def generated_models(tmp_path, db, monkeypatch):
    document = make_client().get("/v2/schema?format=json").json()
    target = tmp_path / "stimmwerk_models.py"
    generate(json.dumps(document), input_file_type=InputFileType.OpenAPI, output=target,
             output_model_type=DataModelType.PydanticV2BaseModel, extra_fields="forbid",
             strict_nullable=True, formatters=[Formatter.BUILTIN])
    spec = importlib.util.spec_from_file_location("stimmwerk_models", target)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "stimmwerk_models", module)  # pydantic resolves its references there
    spec.loader.exec_module(module)
    return document, module


def model_of(document, module, path):
    schema = document["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    return getattr(module, schema["$ref"].rsplit("/", 1)[1])


@pytest.mark.slow
def test_the_generated_client_parses_every_list_of_the_demo_tenant(demo_client, generated_models):
    document, module = generated_models
    for path, key in LISTS.items():
        body = demo_client.get(path).json()
        parsed = model_of(document, module, path).model_validate(body)
        assert len(getattr(parsed, key)) == len(body[key]), path
    calls = model_of(document, module, "/v2/calls").model_validate(demo_client.get("/v2/calls").json())
    assert calls.calls, "the demo tenant has calls"
