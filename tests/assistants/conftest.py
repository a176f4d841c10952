import json

import pytest

from registry_app import snapshot
from registry_app.demo import SHIPPED_DOCUMENT
from registry_app.services import registry_load


@pytest.fixture(autouse=True)
def _no_registry_snapshot_between_tests():
    snapshot.invalidate()
    yield
    snapshot.invalidate()


@pytest.fixture
def registry_loaded(db):
    """The registry the project ships, loaded; the id of one of its chat lanes."""
    registry_load(document=json.loads(SHIPPED_DOCUMENT.read_text(encoding="utf-8")), loaded_by="tests")
    return "chat-llama-local"
