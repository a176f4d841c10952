import json

from registry_app.demo import seed
from registry_app.models import RegistryVersion
from tests.registry_app.conftest import load


def test_seed_loads_the_shipped_registry_once(tenant_a, registry_document):
    seed(tenant_a)
    seed(tenant_a)
    version = RegistryVersion.objects.get()
    assert version.document == registry_document and version.loaded_by == "seed_demo"


def test_seed_keeps_an_operators_registry(tenant_a, registry_document):
    registry_document["version"] = "operator-1"
    load(json.loads(json.dumps(registry_document)))
    seed(tenant_a)
    assert list(RegistryVersion.objects.values_list("version", flat=True)) == ["operator-1"]
