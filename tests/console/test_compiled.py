"""A CompiledQuery returns what its QuerySet returns, compiles once per variant, and
refuses values that would not be plain SQL parameters."""
import datetime as dt
import zoneinfo

import pytest
from django.db import connection
from django.utils import timezone

from calls_app.models import Call, TranscriptEntry
from calls_app.services import carrier_create
from console.assistants.models import Assistant
from console.compiled import CompiledQuery
from console.representation import datetime_text
from tests.queries import assert_query_count

pytestmark = pytest.mark.django_db

COLUMNS = ("id", "direction", "disclosed", "recording_enabled", "seconds", "max_seconds", "created_at", "started_at")


@pytest.fixture
def calls(tenant_a, tenant_b):
    carrier_create(carrier_id="testcarrier")
    moment = dt.datetime(2025, 3, 1, 10, 0, 0, 123456, tzinfo=dt.timezone.utc)
    for tenant in (tenant_a, tenant_b):
        for n in range(5):
            call = Call.objects.create(tenant=tenant, carrier_id="testcarrier", direction=("inbound", "outbound")[n % 2],
                                       to_e164="+493055501234", status="active", disclosed=bool(n % 2),
                                       recording_enabled=n == 3, seconds=n, max_seconds=None if n % 2 else 60 * n,
                                       started_at=None if n == 0 else moment + dt.timedelta(seconds=n))
            TranscriptEntry.objects.create(call=call, role="user", text="Hallo", ts=moment)


def newest(tenant_id, *, limit):
    return Call.objects.for_tenant(tenant_id).newest_first().values_list(*COLUMNS)[:limit]


def test_rows_are_those_of_the_queryset_with_the_orms_conversions(calls, tenant_a, tenant_b):
    query = CompiledQuery(newest)
    for tenant in (tenant_a, tenant_b, tenant_a):
        for limit in (1, 3, 10):
            assert query(tenant.id, limit=limit) == list(newest(tenant.id, limit=limit))
    rows = query(tenant_a.id, limit=10)
    assert {type(row[2]) for row in rows} == {bool} and {type(row[6]) for row in rows} == {dt.datetime}
    assert rows[-1][7] is None and rows[0][6].tzinfo is not None


def test_each_variant_is_compiled_once_and_runs_one_statement(calls, tenant_a, tenant_b):
    query = CompiledQuery(newest)
    for tenant in (tenant_a, tenant_b):
        with assert_query_count(1):
            query(tenant.id, limit=2)
    query(tenant_a.id, limit=3)
    assert len(query._compiled) == 2  # limit 2 and limit 3


def test_string_and_several_values(calls, tenant_a):
    query = CompiledQuery(lambda tenant_id, direction, role: Call.objects.for_tenant(tenant_id).filter(
        direction=direction, transcript_entries__role=role).order_by("id").values_list("id", flat=False))
    expected = list(Call.objects.filter(tenant=tenant_a, direction="outbound").order_by("id").values_list("id"))
    assert query(tenant_a.id, "outbound", "user") == expected and len(expected) == 2
    assert query(tenant_a.id, "inbound", "system") == []


def test_a_value_the_orm_writes_into_a_pattern_is_refused(tenant_a):
    query = CompiledQuery(lambda name: Assistant.objects.filter(name__contains=name).values_list("id"))
    with pytest.raises(ValueError, match="not plain SQL parameters"):
        query("Empfang")


@pytest.mark.parametrize("value", [True, None, 1.5, dt.date(2025, 1, 1)])
def test_only_int_and_str_values(tenant_a, value):
    with pytest.raises(TypeError):
        CompiledQuery(lambda v: Assistant.objects.filter(name=v).values_list("id"))(value)


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/New_York"])
def test_timestamps_as_text_are_what_the_api_writes_of_the_orms_values(calls, tenant_a, zone):
    query = CompiledQuery(newest, datetimes_as_text=True)
    with timezone.override(zoneinfo.ZoneInfo(zone)):
        expected = [tuple(datetime_text(value) if isinstance(value, dt.datetime) else value for value in row)
                    for row in newest(tenant_a.id, limit=10)]
        assert query(tenant_a.id, limit=10) == expected
    assert expected[0][6].endswith({"UTC": "Z", "Europe/Berlin": "+01:00", "America/New_York": "-05:00"}[zone])
    assert expected[-1][7] is None and ".123456" in expected[0][7]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's stored text")
@pytest.mark.parametrize("stored", ["2025-03-01T10:00:00", "2025-03-01 10:00:00.000000", "2025-03-01 10:00:00+00:00",
                                    "2025-03-01 10:00"])
def test_timestamp_text_in_another_form_is_read_like_the_orm_reads_it(calls, tenant_a, stored):
    call = Call.objects.filter(tenant=tenant_a).order_by("-created_at").first()
    with connection.cursor() as cursor:
        cursor.execute('UPDATE "calls_app_call" SET "started_at" = %s WHERE "id" = %s', [stored, call.pk])
    rows = CompiledQuery(newest, datetimes_as_text=True)(tenant_a.id, limit=10)
    assert rows[0][7] == datetime_text(newest(tenant_a.id, limit=1)[0][7]) == "2025-03-01T10:00:00Z"


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_every_fraction_of_a_second_is_written_as_the_api_writes_it(calls, tenant_a, zone):
    # Databases write fractions without trailing zeros (PostgreSQL: .1, .0567) or not at all.
    moment = dt.datetime(2025, 3, 1, 10, 0, 0, tzinfo=dt.timezone.utc)
    calls_of_a = list(Call.objects.filter(tenant=tenant_a).order_by("-created_at", "-id"))
    for call, microsecond in zip(calls_of_a, [0, 100000, 56700, 123456, 5], strict=True):
        Call.objects.filter(pk=call.pk).update(started_at=moment.replace(microsecond=microsecond))
    query = CompiledQuery(newest, datetimes_as_text=True)
    with timezone.override(zoneinfo.ZoneInfo(zone)):
        expected = [datetime_text(row[7]) for row in newest(tenant_a.id, limit=10)]
        assert [row[7] for row in query(tenant_a.id, limit=10)] == expected
    assert (zone != "UTC") or expected == ["2025-03-01T10:00:00Z", "2025-03-01T10:00:00.100000Z",
                                           "2025-03-01T10:00:00.056700Z", "2025-03-01T10:00:00.123456Z",
                                           "2025-03-01T10:00:00.000005Z"]


def test_the_first_and_the_last_year_are_written_as_the_api_writes_them(calls, tenant_a):
    first, last = dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(9999, 12, 31, 23, 59, 59, 999999,
                                                                             tzinfo=dt.timezone.utc)
    calls_of_a = list(Call.objects.filter(tenant=tenant_a).order_by("-created_at", "-id"))
    Call.objects.filter(pk=calls_of_a[0].pk).update(started_at=first)
    Call.objects.filter(pk=calls_of_a[1].pk).update(started_at=last)
    rows = CompiledQuery(newest, datetimes_as_text=True)(tenant_a.id, limit=2)
    assert [row[7] for row in rows] == [datetime_text(first), datetime_text(last)] == [
        "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z"]
