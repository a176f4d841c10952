import pytest

from console.demo import seed_demo
from scripts_app.models import ScriptOverride

pytestmark = pytest.mark.django_db


def test_seed_demo_adds_script_overrides_once():
    seed_demo()
    overrides = list(ScriptOverride.objects.filter(tenant__slug="demo").values_list("touchpoint_id", "text"))
    assert len(overrides) == 2
    ScriptOverride.objects.filter(touchpoint_id="inbound.greeting").update(text="Vom Operator geändert.")
    seed_demo()
    assert ScriptOverride.objects.count() == 2
    assert ScriptOverride.objects.get(touchpoint_id="inbound.greeting").text == "Vom Operator geändert."
