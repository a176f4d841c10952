import json

import pytest

from registry_app import snapshot
from registry_app.demo import SHIPPED_DOCUMENT
from registry_app.services import registry_load
from tests.gateway_app.conftest import chat_server  # noqa: F401 - the fake model lanes' fixture (the lane check)


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


def knowledge_document(tenant, title="Häufige Fragen"):
    """One knowledge document of `tenant` (its id is what an assistant names)."""
    from knowledge_app.services import knowledge_document_create

    return knowledge_document_create(tenant=tenant, title=title, content_type="text/markdown",
                                     text="## Öffnungszeiten\n\nMontag bis Freitag von 8 bis 18 Uhr.")
