"""`Call.transcript_version` is kept by the database (calls_app migration 0006): every
write, change or delete of a transcript line changes its call's version, whoever does
it, and nothing the application saves puts an old version back. The call list's text
cache trusts it (tests/calls_app/test_call_list.py)."""
import datetime as dt

import pytest
from django.db import connection

from calls_app.models import Call, TranscriptEntry
from tests.calls_app.conftest import CALLER, NUMBER_A
from tests.calls_app.test_webhook_hot_path import line, started

pytestmark = pytest.mark.django_db

MOMENT = dt.datetime(2025, 3, 1, 10, 0, tzinfo=dt.timezone.utc)


@pytest.fixture
def calls(tenant_a, carrier):
    return [Call.objects.create(tenant=tenant_a, carrier=carrier, carrier_call_id=f"V{n}", direction="inbound",
                                from_e164=CALLER, to_e164=NUMBER_A, status="active") for n in range(3)]


def versions(calls):
    return list(Call.objects.filter(pk__in=[call.pk for call in calls]).order_by("carrier_call_id")
                .values_list("transcript_version", flat=True))


def test_a_new_call_has_never_had_a_line(calls):
    assert versions(calls) == [0, 0, 0]


def test_each_line_written_changes_only_its_calls_version(calls):
    TranscriptEntry.objects.create(call=calls[0], role="user", text="Hallo.", ts=MOMENT)
    TranscriptEntry.objects.bulk_create([TranscriptEntry(call=calls[1], role="user", text=f"Zeile {n}", ts=MOMENT)
                                         for n in range(3)])
    first = versions(calls)
    assert first[0] > 0 and first[1] > 0 and first[2] == 0
    TranscriptEntry.objects.create(call=calls[1], role="assistant", text="Gerne.", ts=MOMENT)
    second = versions(calls)
    assert second[0] == first[0] and second[1] > first[1] and second[2] == 0


def test_deleting_lines_changes_the_version_of_every_call_they_belonged_to(calls):
    for call in calls[:2]:
        TranscriptEntry.objects.create(call=call, role="user", text="Hallo.", ts=MOMENT)
    before = versions(calls)
    TranscriptEntry.objects.filter(call__in=calls).delete()  # one statement for both calls
    after = versions(calls)
    assert after[0] > before[0] and after[1] > before[1] and after[2] == before[2] == 0


def test_a_line_changed_or_moved_behind_the_orm_changes_both_calls(calls):
    entry = TranscriptEntry.objects.create(call=calls[0], role="user", text="Hallo.", ts=MOMENT)
    before = versions(calls)
    with connection.cursor() as cursor:  # as a hand-made repair might
        cursor.execute("UPDATE calls_app_transcriptentry SET call_id = %s, text = %s WHERE id = %s",
                       [calls[2].pk, "anders", entry.pk])
    after = versions(calls)
    assert after[0] > before[0] and after[1] == before[1] and after[2] > before[2]


def test_lines_from_the_webhooks_hand_written_sql_change_the_version(carrier_client, number_a):
    carrier_client.post("call.started", started("CAV"))
    call = Call.objects.get(carrier_call_id="CAV")
    assert call.transcript_version == 0
    assert carrier_client.post("call.transcript", line("CAV")).status_code == 200  # the hot path
    call.refresh_from_db()
    assert call.transcript_version > 0


def test_saving_a_call_read_before_its_lines_keeps_the_databases_version(calls):
    stale = Call.objects.get(pk=calls[0].pk)
    TranscriptEntry.objects.create(call=calls[0], role="user", text="Hallo.", ts=MOMENT)
    (written, *_rest) = versions(calls)
    stale.status = "completed"
    stale.save()  # a full save, as the admin does
    call = Call.objects.get(pk=calls[0].pk)
    assert call.status == "completed" and call.transcript_version == written > 0
