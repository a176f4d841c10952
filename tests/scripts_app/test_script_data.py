"""The direct representation of scripts (serializers.script_data) is byte for byte what
ScriptSerializer renders, for every touchpoint, default and overridden, and so are the
list and detail endpoints."""
import pytest
from rest_framework.renderers import JSONRenderer

from scripts_app import selectors
from scripts_app.catalog import catalog
from scripts_app.models import ScriptOverride
from scripts_app.serializers import ScriptSerializer, script_data

pytestmark = pytest.mark.django_db

TEXTS = ['Guten Tag bei "{companyName}".\u2028Zeile', "Ärger\nmit\tUmlauten \\ und / Zeichen", "x" * 4000]


@pytest.fixture
def overridden(tenant_a, tenant_b):
    for n, tp in enumerate(list(catalog())[::2]):
        ScriptOverride.objects.create(tenant=tenant_a, touchpoint_id=tp, text=TEXTS[n % len(TEXTS)])
    ScriptOverride.objects.create(tenant=tenant_b, touchpoint_id=list(catalog())[1], text="Fremd.")


def render(data):
    return JSONRenderer().render(data)


def test_script_data_renders_exactly_as_the_serializer(overridden, tenant_a):
    scripts = selectors.effective_scripts(tenant_a)
    assert {script.source for script in scripts} == {"default", "tenant"}
    assert render([script_data(script) for script in scripts]) == render(ScriptSerializer(scripts, many=True).data)


def test_the_endpoints_serve_the_serializer_bytes(overridden, tenant_a, api_a):
    scripts = selectors.effective_scripts(tenant_a)
    listed = api_a.get("/v2/audio/scripts").content
    assert listed == render({"scripts": ScriptSerializer(scripts, many=True).data})
    for script in scripts[:3]:
        detail = api_a.get(f"/v2/audio/scripts/{script.touchpoint_id}").content
        assert detail == render({**ScriptSerializer(script).data, "analysis": script.analysis()})
