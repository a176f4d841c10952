"""The walls between the apps (docs/architecture.md) as import-linter contracts.

`make test` runs `lint-imports` on the real tree; these tests prove the contracts
would catch a forbidden import, on a copy of the tree with one such import added.
"""
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from django.apps import apps

ROOT = Path(__file__).resolve().parents[2]
# The packages import-linter checks, as its configuration names them (a new app is
# copied without touching this test).
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
# Each case runs lint-imports in a process on a copy of the tree: `make test` and CI run
# them; `make test-fast` still lints the real tree.
pytestmark = pytest.mark.slow


def lint_imports(tree):
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=tree, capture_output=True, text=True,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}, timeout=120)


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory):
    """The project's packages and its import-linter configuration, copied."""
    tree = tmp_path_factory.mktemp("tree")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    return tree


def with_module(tree, relative_path, source):
    path = tree / relative_path
    path.write_text(source)
    return path


def test_the_contracts_hold_on_the_project():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(("module", "source", "broken"), [
    ("console/_probe.py", "import scripts_app.models\n", "Layers"),
    ("registry_app/_probe.py", "import speech_app.services\n", "Layers"),
    ("speech_app/_probe.py", "import calls_app.models\n", "Layers"),
    ("speech_app/_probe.py", "import gateway_app.services\n", "Layers"),
    ("gateway_app/_probe.py", "from leads_app import services\n", "Layers"),
    ("leads_app/_probe.py", "from calls_app import services\n", "Leads never import calls"),
    ("calls_app/_probe.py", "import privacy_app.services\n", "Layers"),
    ("leads_app/_probe.py", "from privacy_app.models import Export\n", "Layers"),
    ("console/_probe.py", "import privacy_app.selectors\n", "Layers"),
    ("webhooks_app/_probe.py", "from leads_app.models import Lead\n", "Layers"),
    ("console/_probe.py", "import webhooks_app.services\n", "Layers"),
    ("webhooks_app/_probe.py", "import speech_app.cache\n", "Webhooks know no feature"),
    ("calls_app/_probe.py", "import agent_app.services\n", "Layers"),
    ("calls_app/_probe.py", "from tools_app import services\n", "none of them imports tools_app"),
    ("leads_app/_probe.py", "import tools_app.definitions\n", "none of them imports tools_app"),
    ("console/_probe.py", "from tools_app.models import HttpTool\n", "Layers"),
    ("webhooks_app/_probe.py", "import tools_app.services\n", "Webhooks know no feature"),
    ("console/_probe.py", "import agent_app.routing\n", "Layers"),
    ("agent_app/_probe.py", "from calls_app.models import TranscriptEntry\n",
     "The agent writes calls only through calls_app's services"),
    # Siblings are independent (docs/architecture.md): the top layer's apps never import
    # each other, nor do the features, but for calls_app's two named uses of leads_app.
    ("dashboard_app/_probe.py", "import privacy_app.selectors\n", "Layers"),
    ("privacy_app/_probe.py", "from dashboard_app import selectors\n", "Layers"),
    ("privacy_app/_probe.py", "import agent_app.services\n", "Layers"),
    ("agent_app/_probe.py", "import privacy_app.services\n", "Layers"),
    ("agent_app/_probe.py", "import dashboard_app.views\n", "Layers"),
    ("dashboard_app/_probe.py", "import agent_app.models\n", "Layers"),
    ("scripts_app/_probe.py", "from calls_app.models import Call\n", "Layers"),
    ("calls_app/_probe.py", "import scripts_app.services\n", "Layers"),
    ("scripts_app/_probe.py", "import leads_app.models\n", "Layers"),
    ("leads_app/_probe.py", "import scripts_app.selectors\n", "Layers"),
    ("calls_app/_probe.py", "from leads_app import services\n", "Layers"),
    ("calls_app/_probe.py", "from leads_app.models import Lead\n", "Layers"),  # only calls_app.services may
    ("registry_app/_probe.py", "from console.tenants.models import Tenant\n", "The registry holds no tenant data"),
    ("gateway_app/_probe.py", "from console.tenants.models import Tenant\n", "The gateway holds no tenant data"),
    ("scripts_app/analysis/_probe.py", "from django.conf import settings\n", "The linter's analysis imports no Django"),
    ("knowledge_app/_probe.py", "import calls_app.models\n", "Knowledge stands on the core alone"),
    ("knowledge_app/_probe.py", "from gateway_app import services\n", "Knowledge stands on the core alone"),
    ("console/_probe.py", "import knowledge_app.selectors\n", "Layers"),
    ("knowledge_app/_probe.py", "import agent_app.consumer\n", "Layers"),
    ("leads_app/_probe.py", "import csv\n", "Every CSV is written by console.csv_export"),
    ("console/_probe.py", "from csv import writer\n", "Every CSV is written by console.csv_export"),
    ("calls_app/_probe.py", "from campaigns_app import services\n", "Layers"),
    ("leads_app/_probe.py", "import campaigns_app.models\n", "Layers"),
    ("webhooks_app/_probe.py", "import campaigns_app.models\n", "Webhooks know no feature"),
    ("campaigns_app/_probe.py", "import privacy_app.services\n", "Layers"),
    ("campaigns_app/_probe.py", "import csv\n", "Every CSV is written by console.csv_export"),
    # SMS sit between the campaigns and the top (issue 37 §4): nothing below uses them,
    # and they use nothing of the top.
    ("campaigns_app/_probe.py", "import messaging_app.services\n", "Layers"),
    ("calls_app/_probe.py", "from messaging_app.models import Sms\n", "Layers"),
    ("webhooks_app/_probe.py", "import messaging_app.providers\n", "Webhooks know no feature"),
    ("messaging_app/_probe.py", "import privacy_app.services\n", "Layers"),
    ("messaging_app/_probe.py", "import agent_app.services\n", "Layers"),
    ("calls_app/_probe.py", "from console.compiled import CompiledQuery\n", "The fast read layer is the core's"),
    ("leads_app/_probe.py", "from console.rendering import fast_json_renderers\n", "The fast read layer is the core's"),
])
def test_a_forbidden_import_breaks_its_contract(tree_copy, module, source, broken):
    probe = with_module(tree_copy, module, source)
    try:
        result = lint_imports(tree_copy)
    finally:
        probe.unlink()
    assert result.returncode != 0
    broken_section = result.stdout.partition("Broken contracts")[2]
    assert broken in broken_section, result.stdout


@pytest.mark.parametrize("module", ["knowledge_app/analysis.py", "knowledge_app/pdf_extract.py"])
def test_the_knowledge_text_analysis_and_pdf_reader_stay_without_django(tree_copy, module):
    path = tree_copy / module
    original = path.read_text()
    path.write_text(original + "\nfrom django.conf import settings  # noqa\n")
    try:
        result = lint_imports(tree_copy)
    finally:
        path.write_text(original)
    assert result.returncode != 0
    assert "import no Django (the reader" in result.stdout.partition("Broken contracts")[2], result.stdout


@pytest.mark.parametrize("app_label", ["registry_app", "gateway_app"])
def test_no_registry_or_gateway_model_points_at_tenant_data(app_label):
    for model in apps.get_app_config(app_label).get_models():
        for field in model._meta.get_fields():
            related = getattr(field, "related_model", None)
            if related is not None:
                assert related._meta.app_label in (app_label, "auth"), (model, field)


def test_the_docs_draw_the_layers_and_their_exceptions_as_the_contract_has_them():
    """docs/architecture.md names every exception of the layers contract, draws each
    layer's apps in one row in the contract's order, and lists each app's bullet once."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(contract for contract in config if contract["type"] == "layers")
    docs = (ROOT / "docs" / "architecture.md").read_text()
    assert not [rule for rule in layers["ignore_imports"] if f"`{rule}`" not in docs]
    drawing = docs.partition("```\n")[2].partition("```")[0].splitlines()
    rows = []
    for layer in layers["layers"]:
        apps_of_layer = [name.strip() for name in layer.split("|")]
        row = next((number for number, line in enumerate(drawing) if all(name in line for name in apps_of_layer)),
                   None)
        assert row is not None, f"no row of the drawing holds {apps_of_layer}"
        rows.append(row)
    assert rows == sorted(rows), "the drawing's rows are not in the contract's order"
    bullets = [line.split("`")[1] for line in docs.splitlines() if line.startswith("- `") and "_app`" in line]
    assert len(bullets) == len(set(bullets)), sorted({b for b in bullets if bullets.count(b) > 1})
