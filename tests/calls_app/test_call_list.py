"""The call list's body (calls_app/call_list.py: rows converted as the declaration
CALLS derives from CallSerializer, each call's text kept per process while
its row and lines stay the same) is byte for byte what CallSerializer renders, for every
kind of call and text, cold or from the cache, and never outlives a change of the call
or its transcript."""
import datetime as dt
import zoneinfo

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from calls_app import selectors
from calls_app.call_list import CALLS
from calls_app.call_texts import ENTRY_OVERHEAD, CallTextCache, call_texts
from calls_app.models import Call, TranscriptEntry
from calls_app.serializers import CallSerializer
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
            # A carrier's link, a recording of ours (a signed link: calls_app.recordings), none.
            recording_url=("https://carrier.example/r.mp3", "/voice/recordings/x")[n % 12 // 6] if n % 6 == 0 else "",
            lead_id="ld_x" if n % 8 == 0 else "",
            max_seconds=600 if n % 3 == 0 else None, recording_enabled=n % 6 == 0, transcription_enabled=bool(n % 9),
            reserved_period="2025-03", redacted=n % 5 == 1,
        ))
        for i in range(n % 4):
            TranscriptEntry.objects.create(call=calls[-1], role=("assistant", "user", "system")[i],
                                           text=f'Zeile {i} "mit" Ümlaut\n', ts=MOMENT + dt.timedelta(microseconds=i))
    Call.objects.create(tenant=tenant_b, carrier=carrier, carrier_call_id="OTHER", direction="inbound",
                        to_e164="+493055501234", status="active")
    return calls


def newest(tenant, limit):
    """The rows of the first page, with their transcripts, for DRF's serializer."""
    return CALLS.queryset(tenant).with_transcript()[:limit]


def rendered(data):
    return JSONRenderer().render({"calls": data})


def expected_page(tenant, limit=200):
    return rendered(CallSerializer(newest(tenant, limit), many=True).data)


def page(tenant, limit=200):
    """As the list view renders it (the calls' text spliced in)."""
    calls = CALLS.page(tenant, {"limit": limit})["calls"]
    return FastJSONRenderer().render({"calls": calls}, None, {})


@pytest.mark.parametrize("limit", [1, 7, 24, 200])
def test_call_list_renders_exactly_as_the_serializer_cold_and_cached(varied_calls, tenant_a, limit):
    expected = expected_page(tenant_a, limit)
    assert page(tenant_a, limit) == expected
    assert len(call_texts) == min(limit, 24)
    assert page(tenant_a, limit) == expected


def test_call_list_follows_the_current_time_zone_like_the_serializer(varied_calls, tenant_a):
    assert page(tenant_a, 24) == expected_page(tenant_a, 24)  # kept in UTC
    with timezone.override(zoneinfo.ZoneInfo("Europe/Berlin")):
        expected = expected_page(tenant_a, 24)
        assert page(tenant_a, 24) == expected
        assert b"+01:00" in expected


def test_a_page_of_known_calls_takes_one_query_and_new_ones_two(varied_calls, tenant_a):
    with assert_query_count(2):  # the calls with their line ids; the lines of those not known yet
        page(tenant_a)
    with assert_query_count(1):
        page(tenant_a)


def test_a_new_transcript_line_is_in_the_next_page(varied_calls, tenant_a):
    page(tenant_a)
    TranscriptEntry.objects.create(call=varied_calls[3], role="user", text="Noch eine Frage.", ts=MOMENT)
    expected = expected_page(tenant_a)
    with assert_query_count(2):
        assert page(tenant_a) == expected
    assert b"Noch eine Frage." in expected


def test_an_erased_transcript_and_a_changed_call_are_never_served_from_the_cache(varied_calls, tenant_a):
    before = page(tenant_a)
    assert b"Zeile 2" in before
    TranscriptEntry.objects.filter(call__in=varied_calls).delete()
    Call.objects.filter(pk=varied_calls[0].pk).update(redacted=True, status="completed")
    after = page(tenant_a)
    assert after == expected_page(tenant_a)
    assert b"Zeile" not in after


def test_transcript_lines_cannot_be_changed_once_written(varied_calls):
    line = TranscriptEntry.objects.filter(call=varied_calls[3]).first()
    line.text = "anders"
    with pytest.raises(TypeError, match="never changed"):
        line.save()
    with pytest.raises(TypeError, match="never changed"):
        TranscriptEntry.objects.filter(pk=line.pk).update(text="anders")
    with pytest.raises(TypeError, match="never changed"):
        TranscriptEntry.objects.bulk_update([line], ["text"])


def test_a_call_whose_lines_changed_while_it_was_read_is_written_afresh_next_time(varied_calls, tenant_a,
                                                                                   monkeypatch):
    read_lines = selectors.transcript_lines

    def a_line_arrives_meanwhile(*, call_ids):
        TranscriptEntry.objects.create(call=varied_calls[1], role="user", text="Gerade eben.", ts=MOMENT)
        return read_lines(call_ids=call_ids)

    monkeypatch.setattr(selectors, "transcript_lines", a_line_arrives_meanwhile)
    assert b"Gerade eben." in page(tenant_a)
    monkeypatch.setattr(selectors, "transcript_lines", read_lines)
    expected = expected_page(tenant_a)
    with assert_query_count(2):  # the call's row moved on with the line: its text is read again
        assert page(tenant_a) == expected
    with assert_query_count(1):
        assert page(tenant_a) == expected


def test_the_cache_keeps_to_its_bound_dropping_the_least_recently_used():
    cache = CallTextCache(max_bytes=3 * (ENTRY_OVERHEAD + 10))
    for key in "abc":
        cache.put(key, b"x" * 10)
    assert cache.get("a") == b"x" * 10  # now the most recently used
    cache.put("d", b"y" * 10)
    assert [cache.get(key) is not None for key in "abcd"] == [True, False, True, True]
    cache.put("huge", b"z" * 10_000)  # larger than the whole cache: not kept
    assert cache.get("huge") is None and len(cache) == 3
    off = CallTextCache(max_bytes=0)
    off.put("a", b"x")
    assert off.get("a") is None


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


def test_tricky_text_comes_out_as_the_serializer_writes_it(tricky_calls, tenant_a):
    expected = expected_page(tenant_a)
    assert page(tenant_a) == expected
    assert page(tenant_a) == expected  # from the cache
    assert b"\\u2028" in expected and b"</script>" in expected


@pytest.mark.parametrize("stored", ["2025-03-01 10:00:00.000000", "2025-03-01 10:00:00.5"])
def test_timestamps_stored_in_other_forms_come_out_as_the_serializer_writes_them(tricky_calls, tenant_a, stored):
    if connection.vendor != "sqlite":
        pytest.skip("only SQLite keeps the text a timestamp was written as")
    with connection.cursor() as cursor:  # as another writer might have stored it
        cursor.execute("UPDATE calls_app_transcriptentry SET ts = %s WHERE id = %s",
                       [stored, tricky_calls[0].transcript_entries.order_by("id").first().id])
        cursor.execute("UPDATE calls_app_call SET started_at = %s WHERE id = %s", [stored, tricky_calls[1].id])
    assert page(tenant_a) == expected_page(tenant_a)


def test_list_endpoint_serves_the_serializer_bytes_for_tricky_text_indented_or_not(tricky_calls, tenant_a, api_a):
    calls = CallSerializer(newest(tenant_a, 200), many=True).data
    assert api_a.get("/v2/calls?limit=200").content == JSONRenderer().render({"calls": calls, "next": None})
    indented = "application/json; indent=4"
    assert api_a.get("/v2/calls?limit=200", HTTP_ACCEPT=indented).content == \
        JSONRenderer().render({"calls": calls, "next": None}, indented, {})
