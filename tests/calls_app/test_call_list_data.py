"""The list endpoint's direct representation (serializers.call_list_data) is byte for byte
what CallSerializer renders, for every kind of call."""
import datetime as dt
import zoneinfo

import pytest
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from calls_app import selectors
from calls_app.models import Call, TranscriptEntry
from calls_app.serializers import CallSerializer, call_list_data
from tests.queries import assert_query_count

pytestmark = pytest.mark.django_db

MOMENT = dt.datetime(2025, 3, 1, 10, 0, 0, 123456, tzinfo=dt.timezone.utc)


@pytest.fixture
def varied_calls(tenant_a, tenant_b, carrier):
    """Calls with every optional field set and unset (redacted or not), 0–3 transcript lines, and a call of
    another tenant that must not appear."""
    calls = []
    for n in range(24):
        calls.append(Call.objects.create(
            tenant=tenant_a, carrier=carrier, carrier_call_id=f"C{n}", direction="inbound" if n % 3 else "outbound",
            from_e164="" if n % 7 == 0 else "+491711234567", to_e164="+493055501234",
            status=("queued", "active", "completed", "no-answer")[n % 4], seconds=n * 7, disclosed=bool(n % 2),
            started_at=None if n % 5 == 0 else MOMENT + dt.timedelta(seconds=n),
            ended_at=MOMENT + dt.timedelta(minutes=n) if n % 4 == 2 else None,
            recording_url="https://carrier.example/r.mp3" if n % 6 == 0 else "", lead_id="ld_x" if n % 8 == 0 else "",
            max_seconds=600 if n % 3 == 0 else None, recording_enabled=n % 6 == 0, transcription_enabled=bool(n % 9),
            reserved_period="2025-03", redacted=n % 5 == 1,
        ))
        for i in range(n % 4):
            TranscriptEntry.objects.create(call=calls[-1], role=("assistant", "user", "system")[i],
                                           text=f'Zeile {i} "mit" Ümlaut\n', ts=MOMENT + dt.timedelta(microseconds=i))
    Call.objects.create(tenant=tenant_b, carrier=carrier, carrier_call_id="OTHER", direction="inbound",
                        to_e164="+493055501234", status="active")
    return calls


def rendered(data):
    return JSONRenderer().render({"calls": data})


@pytest.mark.parametrize("limit", [1, 7, 24, 200])
def test_call_list_data_renders_exactly_as_the_serializer(varied_calls, tenant_a, limit):
    expected = rendered(CallSerializer(selectors.calls_newest(tenant=tenant_a, limit=limit), many=True).data)
    assert rendered(call_list_data(*selectors.calls_newest_rows(tenant=tenant_a, limit=limit))) == expected


def test_call_list_data_follows_the_current_time_zone_like_the_serializer(varied_calls, tenant_a):
    with timezone.override(zoneinfo.ZoneInfo("Europe/Berlin")):
        expected = rendered(CallSerializer(selectors.calls_newest(tenant=tenant_a, limit=24), many=True).data)
        assert rendered(call_list_data(*selectors.calls_newest_rows(tenant=tenant_a, limit=24))) == expected
        assert b"+01:00" in expected


def test_list_endpoint_serves_the_serializer_bytes(varied_calls, tenant_a, api_a):
    calls = CallSerializer(selectors.calls_newest(tenant=tenant_a, limit=200), many=True).data
    assert api_a.get("/v2/calls?limit=200").content == JSONRenderer().render({"calls": calls, "next": None})


def test_rows_take_two_queries_and_none_without_transcript_query_when_empty(varied_calls, tenant_a, tenant_b):
    with assert_query_count(2):
        selectors.calls_newest_rows(tenant=tenant_a, limit=200)
    Call.objects.filter(tenant=tenant_b).delete()
    with assert_query_count(1):
        assert selectors.calls_newest_rows(tenant=tenant_b, limit=200) == ([], {})
