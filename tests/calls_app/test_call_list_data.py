"""The list endpoint's direct representation (serializers.call_list_data, with the
transcripts the database writes as JSON) is byte for byte what CallSerializer renders,
for every kind of call and text."""
import datetime as dt
import zoneinfo

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from calls_app import selectors
from calls_app.models import Call, TranscriptEntry
from calls_app.serializers import CallSerializer, call_list_data
from console.rendering import FastJSONRenderer
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


def rendered_fast(data):
    """As the list view renders (transcripts the database wrote are spliced in)."""
    return FastJSONRenderer().render({"calls": data}, None, {})


@pytest.mark.parametrize("limit", [1, 7, 24, 200])
def test_call_list_data_renders_exactly_as_the_serializer(varied_calls, tenant_a, limit):
    expected = rendered(CallSerializer(selectors.calls_newest(tenant=tenant_a, limit=limit), many=True).data)
    assert rendered_fast(call_list_data(*selectors.calls_newest_rows(tenant=tenant_a, limit=limit))) == expected


def test_call_list_data_follows_the_current_time_zone_like_the_serializer(varied_calls, tenant_a):
    with timezone.override(zoneinfo.ZoneInfo("Europe/Berlin")):
        expected = rendered(CallSerializer(selectors.calls_newest(tenant=tenant_a, limit=24), many=True).data)
        assert rendered_fast(call_list_data(*selectors.calls_newest_rows(tenant=tenant_a, limit=24))) == expected
        assert b"+01:00" in expected


# Text the database escapes itself: quotes, backslashes, every control character, the
# separators DRF escapes for JavaScript, emoji, a closing script tag, non-Latin text.
TRICKY_TEXTS = [
    'er sagte "ja" \\ und \\"nein\\"', "".join(map(chr, range(1, 32))) + "\x7f", "a\u2028b\u2029c",
    "😀 👩‍👩‍👧 Grüße", "</script><script>alert(1)</script>", "日本語 עברית", "\t\n\r\b\f", "/ \\u0041 %s %(x)s ''",
    "",
]


@pytest.fixture
def tricky_calls(tenant_a, carrier):
    calls = []
    for n, text in enumerate(TRICKY_TEXTS):
        call = Call.objects.create(tenant=tenant_a, carrier=carrier, carrier_call_id=f"T{n}", direction="inbound",
                                   to_e164="+493055501234", status="completed", reserved_period="2025-03")
        for i, moment in enumerate((MOMENT, MOMENT.replace(microsecond=0), MOMENT.replace(microsecond=10))):
            TranscriptEntry.objects.create(call=call, role="user", text=text[i:] if i < 2 else text,
                                           ts=moment + dt.timedelta(days=n))
        calls.append(call)
    return calls


def test_transcripts_the_database_writes_match_the_serializer_on_tricky_text(tricky_calls, tenant_a):
    calls, lines = selectors.calls_newest_rows(tenant=tenant_a, limit=200)
    assert all(type(transcript) is str for transcript in lines.values())  # written by the database
    expected = rendered(CallSerializer(selectors.calls_newest(tenant=tenant_a, limit=200), many=True).data)
    assert rendered_fast(call_list_data(calls, lines)) == expected
    assert b"\\u2028" in expected and b"</script>" in expected


@pytest.mark.parametrize("stored, queries, written_by_the_database", [
    ("2025-03-01 10:00:00.000000", 2, True),  # a zero fraction that Django would not write
    ("2025-03-01 10:00:00.5", 3, False),  # a form the database does not rewrite: the ORM's path
])
def test_timestamps_stored_in_other_forms_come_out_as_the_serializer_writes_them(
        tricky_calls, tenant_a, stored, queries, written_by_the_database):
    if connection.vendor != "sqlite":
        pytest.skip("only SQLite keeps the text a timestamp was written as")
    with connection.cursor() as cursor:  # as another writer might have stored it
        cursor.execute("UPDATE calls_app_transcriptentry SET ts = %s WHERE id = %s",
                       [stored, tricky_calls[0].transcript_entries.order_by("id").first().id])
    with assert_query_count(queries):
        calls, lines = selectors.calls_newest_rows(tenant=tenant_a, limit=200)
    assert all((type(transcript) is str) == written_by_the_database for transcript in lines.values())
    expected = rendered(CallSerializer(selectors.calls_newest(tenant=tenant_a, limit=200), many=True).data)
    assert rendered_fast(call_list_data(calls, lines)) == expected


def test_list_endpoint_serves_the_serializer_bytes_for_tricky_text_indented_or_not(tricky_calls, tenant_a, api_a):
    calls = CallSerializer(selectors.calls_newest(tenant=tenant_a, limit=200), many=True).data
    assert api_a.get("/v2/calls?limit=200").content == JSONRenderer().render({"calls": calls, "next": None})
    indented = "application/json; indent=4"
    assert api_a.get("/v2/calls?limit=200", HTTP_ACCEPT=indented).content == \
        JSONRenderer().render({"calls": calls, "next": None}, indented, {})
