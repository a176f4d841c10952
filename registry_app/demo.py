"""`seed_demo` (run by `make run`) loads the registry document shipped with the
project when no registry has been loaded yet; an operator's own load is never replaced."""
import json
from pathlib import Path

from registry_app.models import RegistryVersion
from registry_app.services import registry_load

SHIPPED_DOCUMENT = Path(__file__).resolve().parent / "data" / "registry.json"


def seed(tenant):
    # The registry is not tenant data; the tenant argument is the seed_demo interface.
    if RegistryVersion.objects.exists():
        return
    registry_load(document=json.loads(SHIPPED_DOCUMENT.read_text(encoding="utf-8")), loaded_by="seed_demo")
