import copy
import json

import pytest

from registry_app import snapshot
from registry_app.demo import SHIPPED_DOCUMENT
from registry_app.services import registry_load

_SHIPPED = json.loads(SHIPPED_DOCUMENT.read_text(encoding="utf-8"))


@pytest.fixture
def registry_document():
    """A fresh copy of the registry document the project ships (the spec's example)."""
    return copy.deepcopy(_SHIPPED)


@pytest.fixture(autouse=True)
def _no_snapshot_between_tests():
    snapshot.invalidate()
    yield
    snapshot.invalidate()


def load(document, by="tests"):
    return registry_load(document=document, loaded_by=by)


@pytest.fixture
def loaded(db, registry_document):
    """The shipped document loaded as the current version."""
    load(registry_document)
    return registry_document


def lane(document, lane_id):
    return next(entry for entry in document["models"] if entry["id"] == lane_id)


def write_json(tmp_path, document, name="registry.json"):
    path = tmp_path / name
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return path
