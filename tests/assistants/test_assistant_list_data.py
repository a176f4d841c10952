"""The assistant list, derived from its declaration (serializers.ASSISTANTS), is byte for
byte what AssistantSerializer renders for the same rows, and so is the endpoint's body."""
import datetime as dt
import zoneinfo

import pytest
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from console.assistants.models import Assistant
from console.assistants.serializers import ASSISTANTS, AssistantSerializer

pytestmark = pytest.mark.django_db


@pytest.fixture
def varied_assistants(tenant_a, tenant_b):
    """Names and descriptions with quotes, umlauts, line breaks and separators JSON
    escapes, set and empty voices, timestamps with and without microseconds, every
    field of the assistant's mind set and unset (floats among them); and an assistant
    of another tenant, which must not appear."""
    moment = dt.datetime(2025, 3, 30, 0, 59, 59, tzinfo=dt.timezone.utc)  # the night Berlin changes its offset
    for n in range(12):
        mind = {} if n % 4 == 0 else {
            "instructions": f"Sie sind „Anna“.\n{n}", "opening_touchpoint": "inbound.after_hours",
            "tools": ["create_callback", "tl_01jd0000000000000000000000"][: n % 3],
            "knowledge": [f"kd_{n}"] if n % 2 else None, "model_lane": "chat-llama-local" if n % 3 else "",
            "model_temperature": (0.35, 1.0, 0.05)[n % 3], "model_max_tokens": 300 if n % 2 else None,
            "transfer_targets": [{"name": "Zentrale \u2029", "e164": "+4930901820"}] if n % 2 else [],
            "analysis_summary": bool(n % 2), "analysis_success_criteria": "Rückruf" * (n % 2),
            "analysis_schema": {"type": "object", "properties": {"grund": {"type": "string", "maxLength": 80},
                                                                 "wert": {"type": "number", "minimum": 0.5}}},
            "max_duration_sec": 60 * n, "silence_timeout_sec": 10 if n % 2 else None,
            "end_call_phrases": ["Auf Wiederhören"] * (n % 2),
        }
        assistant = Assistant.objects.create(
            tenant=tenant_a, name=f'Empfang "{n}" Ärzte\u2028', description="Zeile 1\nZeile 2\t\\ " * (n % 3),
            language=("de", "en", "de-AT")[n % 3], voice="de+f3" if n % 2 else "", **mind)
        stamps = {"created_at": moment + dt.timedelta(hours=n), "updated_at": moment + dt.timedelta(microseconds=n)}
        Assistant.objects.filter(pk=assistant.pk).update(**stamps)
    Assistant.objects.create(tenant=tenant_b, name="Fremd")


def rendered(data):
    return JSONRenderer().render({"assistants": data})


def expected(tenant):
    return rendered(AssistantSerializer(ASSISTANTS.queryset(tenant), many=True).data)


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_the_derived_list_renders_exactly_as_the_serializer(varied_assistants, tenant_a, zone):
    with timezone.override(zoneinfo.ZoneInfo(zone)):
        body = expected(tenant_a)
        assert rendered(ASSISTANTS.page(tenant_a, {})["assistants"]) == body
    offsets = [b'Z"' in body, b'+01:00"' in body, b'+02:00"' in body]
    assert offsets == ([True, False, False] if zone == "UTC" else [False, True, True])


def test_list_endpoint_serves_the_serializer_bytes(varied_assistants, tenant_a, api_a):
    assert api_a.get("/v2/assistants").content == expected(tenant_a)
