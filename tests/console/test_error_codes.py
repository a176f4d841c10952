"""The registry of error codes: every `ApiError` subclass of the project (and the
generic codes of `console.errors.GENERIC_CODES`) has one status per code, and each is
a row of the "Error codes" table in docs/api.md with that status (and no row is
stale). A client matches on `error.code`; the code must mean one thing."""
import importlib
import pkgutil
import re
from pathlib import Path

import pytest
from django.conf import settings

from console.errors import GENERIC_CODES, ApiError

ROOT = Path(__file__).resolve().parents[2]


def project_packages() -> list[str]:
    """The top-level packages of INSTALLED_APPS that are the project's own (their
    folder is in the checkout), so a new app is covered without being listed here."""
    packages = []
    for app in settings.INSTALLED_APPS:
        top = app.split(".")[0]
        if top not in packages and (ROOT / top / "__init__.py").is_file():
            packages.append(top)
    return packages


PACKAGES = project_packages()
ROW = re.compile(r"^\| `([a-z0-9_]+)` \| (\d{3}) \|")


def _all_subclasses(cls):
    for subclass in cls.__subclasses__():
        yield subclass
        yield from _all_subclasses(subclass)


def project_errors():
    """{(code, status): [class names]} of ApiError and every subclass in the project's
    modules (all of them imported first, so none is missed), plus the generic codes."""
    for package in PACKAGES:
        for module in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
            if ".migrations" not in module.name:
                importlib.import_module(module.name)
    registry = {}
    for cls in [ApiError, *_all_subclasses(ApiError)]:
        if cls.__module__.split(".")[0] in PACKAGES:
            registry.setdefault((cls.code, cls.status), []).append(f"{cls.__module__}.{cls.__qualname__}")
    for status, code in GENERIC_CODES.items():
        registry.setdefault((code, status), []).append(f"GENERIC_CODES[{status}]")
    return registry


def documented_codes():
    """{code: [statuses]} of the "Error codes" table in docs/api.md."""
    text = (ROOT / "docs" / "api.md").read_text()
    section = text.partition("\n### Error codes\n")[2].partition("\n### ")[0]
    table = {}
    for line in section.splitlines():
        match = ROW.match(line)
        if match:
            table.setdefault(match[1], []).append(int(match[2]))
    return table


def codes_with_several_statuses(pairs):
    statuses = {}
    for code, status in pairs:
        statuses.setdefault(code, set()).add(status)
    return {code: sorted(found) for code, found in statuses.items() if len(found) > 1}


@pytest.fixture(scope="module")
def registry():
    return project_errors()


def test_the_packages_are_every_app_of_the_project():
    apps = {path.parent.name for path in ROOT.glob("*_app/apps.py")}
    assert apps <= set(PACKAGES), sorted(apps - set(PACKAGES))
    assert "console" in PACKAGES and "django" not in PACKAGES and "rest_framework" not in PACKAGES


def test_the_registry_finds_the_errors_of_every_layer(registry):
    names = {name for names in registry.values() for name in names}
    for expected in ("console.errors.ValidationFailed", "speech_app.errors.SttBusy", "calls_app.errors.InvalidSignature",
                     "privacy_app.errors.ExportExpired", "agent_app.errors.UnknownAssistant",
                     "campaigns_app.errors.CampaignFinished", "tools_app.errors.ToolInUse",
                     "knowledge_app.errors.DocumentTooLarge"):
        assert expected in names


def test_every_apps_errors_live_in_its_errors_module(registry):
    """One registry per app: a feature app's errors are its `errors.py`'s (the core's
    may live beside the module that raises them, as console is a package of parts)."""
    elsewhere = sorted(name for names in registry.values() for name in names
                       if not name.startswith(("console.", "GENERIC_CODES")) and name.split(".")[1] != "errors")
    assert not elsewhere, f"Move these to their app's errors.py: {elsewhere}"


def test_no_code_has_two_statuses(registry):
    clashes = codes_with_several_statuses(registry)
    assert not clashes, {code: {status: registry[(code, status)] for status in statuses}
                         for code, statuses in clashes.items()}


def test_the_check_catches_a_code_shared_with_another_status():
    assert codes_with_several_statuses([("not_found", 404), ("not_found", 404), ("gone", 410)]) == {}
    assert codes_with_several_statuses([("not_found", 404), ("not_found", 400)]) == {"not_found": [400, 404]}


def test_every_code_is_in_the_docs_with_its_status(registry):
    table = documented_codes()
    missing = {code: names for (code, status), names in registry.items() if code not in table}
    assert not missing, f"Add these codes to the 'Error codes' table of docs/api.md: {missing}"
    wrong = {code: (status, table[code]) for (code, status) in registry if table[code] != [status]}
    assert not wrong, f"docs/api.md names another status (code: (status, documented)): {wrong}"


def test_the_docs_name_no_code_the_project_lacks(registry):
    known = {code for code, _ in registry}
    stale = sorted(set(documented_codes()) - known)
    assert not stale, f"docs/api.md documents codes no error has: {stale}"
