"""The webhook's hot path (call.transcript of a started call, in hand-written SQL) stores
exactly what the ORM path stores, answers like it, and honours secret rotation at once."""
import pytest
from django.test import override_settings

from calls_app import services
from calls_app.models import Call, Carrier, CarrierEvent, TranscriptEntry
from calls_app.signing import carrier_secret, signature_header
from tests.calls_app.conftest import CALLER, NUMBER_A
from tests.conftest import error_of
from tests.queries import assert_query_count

pytestmark = pytest.mark.django_db


def started(ccid):
    return {"carrierCallId": ccid, "direction": "inbound", "from": CALLER, "to": NUMBER_A}


def line(ccid, text="Einen Rückruf bitte.", ts="2025-03-01T10:00:09+01:00"):
    return {"carrierCallId": ccid, "role": "user", "text": text, "ts": ts}


def stored(ccid):
    events = list(CarrierEvent.objects.filter(carrier_call_id=ccid, type="call.transcript").values(
        "carrier_id", "event_id", "type", "occurred_at", "data", "state"))
    entries = list(TranscriptEntry.objects.filter(call__carrier_call_id=ccid).values("role", "text", "ts"))
    return events, entries


def test_transcript_of_a_started_call_is_stored_as_the_orm_path_stores_a_pending_one(carrier_client, number_a):
    # CA1: the line arrives before call.started (pending, applied later by the ORM path);
    # CA2: after it (the hot path). Same event id suffix, same payload.
    occurred = "2025-03-01T10:00:05+01:00"
    assert carrier_client.post("call.transcript", line("CA1"), event_id="e-1", occurred_at=occurred).status_code == 202
    carrier_client.post("call.started", started("CA1"))
    carrier_client.post("call.started", started("CA2"))
    response = carrier_client.post("call.transcript", line("CA2"), event_id="e-2", occurred_at=occurred)
    assert response.status_code == 200
    assert response.content == b'{"received":true,"state":"applied"}'  # the bytes DRF rendered
    assert response["Content-Type"] == "application/json"
    (pending_event,), pending_entries = stored("CA1")
    (hot_event,), hot_entries = stored("CA2")
    assert pending_entries == hot_entries and len(hot_entries) == 1
    assert {**pending_event, "event_id": "e-2", "data": hot_event["data"]} == hot_event
    assert pending_event["data"] == {**hot_event["data"], "carrierCallId": "CA1"}
    assert hot_entries[0]["ts"].isoformat() == "2025-03-01T09:00:09+00:00"
    assert CarrierEvent.objects.get(event_id="e-2").received_at is not None


def test_hot_path_is_four_statements_and_a_transaction(carrier_client, number_a):
    carrier_client.post("call.started", started("CA3"))
    event = carrier_client.event("call.transcript", line("CA3"))
    with assert_query_count(4) as statements:
        assert carrier_client.send(event).status_code == 200
    assert [sql.split()[0] for sql in statements] == ["SELECT", "SELECT", "INSERT", "INSERT"], statements


def test_replay_on_the_hot_path_answers_duplicate_and_stores_nothing(carrier_client, number_a):
    carrier_client.post("call.started", started("CA4"))
    event = carrier_client.event("call.transcript", line("CA4"))
    assert carrier_client.send(event).json() == {"received": True, "state": "applied"}
    again = carrier_client.send(event)
    assert (again.status_code, again.json()) == (200, {"received": True, "state": "duplicate"})
    assert (TranscriptEntry.objects.count(), CarrierEvent.objects.filter(type="call.transcript").count()) == (1, 1)


def test_replay_of_a_still_pending_event_answers_202(carrier_client, number_a):
    event = carrier_client.event("call.transcript", line("CA5"))
    assert carrier_client.send(event).status_code == 202
    assert carrier_client.send(event).status_code == 202
    assert CarrierEvent.objects.get().state == "pending"


def test_transcript_after_call_ended_is_still_kept(carrier_client, number_a):
    carrier_client.post("call.started", started("CA6"))
    carrier_client.post("call.ended", {"carrierCallId": "CA6", "status": "completed", "seconds": 10})
    assert carrier_client.post("call.transcript", line("CA6")).status_code == 200
    assert Call.objects.get().transcript_entries.count() == 1


def test_transcription_off_stores_the_event_but_no_line(carrier_client, number_a, tenant_a):
    tenant_a.transcription_enabled = False
    tenant_a.save(update_fields=["transcription_enabled"])
    carrier_client.post("call.started", started("CA7"))
    assert carrier_client.post("call.transcript", line("CA7")).json()["state"] == "applied"
    assert (TranscriptEntry.objects.count(), CarrierEvent.objects.filter(type="call.transcript").count()) == (0, 1)


def test_invalid_transcript_of_a_started_call_is_400_and_stores_nothing(carrier_client, number_a):
    carrier_client.post("call.started", started("CA8"))
    response = carrier_client.post("call.transcript", {**line("CA8"), "role": "robot"})
    assert response.status_code == 400 and "data.role" in error_of(response)["details"]
    assert not CarrierEvent.objects.filter(type="call.transcript").exists()


def test_other_methods_are_405_in_the_contract_shape(carrier_client):
    response = carrier_client.client.get(f"/voice/webhook/{carrier_client.carrier.pk}")
    assert response.status_code == 405 and error_of(response)["code"] == "method_not_allowed"


def test_rotated_secret_is_refused_at_once_though_the_old_one_was_just_used(carrier_client, number_a):
    carrier_client.post("call.started", started("CA9"))
    old = carrier_client.carrier.secret
    assert carrier_client.post("call.transcript", line("CA9"), secret=old).status_code == 200  # cached now
    new = services.carrier_rotate_secret(carrier=Carrier.objects.get(pk=carrier_client.carrier.pk))
    refused = carrier_client.post("call.transcript", line("CA9"), secret=old)
    assert refused.status_code == 401 and error_of(refused)["code"] == "invalid_signature"
    assert carrier_client.post("call.transcript", line("CA9"), secret=new).status_code == 200
    assert TranscriptEntry.objects.count() == 2


def test_rotation_by_another_process_takes_effect_without_any_cache_reset(carrier_client, number_a):
    # Another worker rotates: only the database changes (no call into this process).
    carrier_client.post("call.started", started("CA10"))
    old = carrier_client.carrier.secret
    assert carrier_client.post("call.transcript", line("CA10"), secret=old).status_code == 200
    Carrier.objects.filter(pk=carrier_client.carrier.pk).update(secret_nonce="0" * 32)
    assert carrier_client.post("call.transcript", line("CA10"), secret=old).status_code == 401
    new = carrier_secret(Carrier.objects.get(pk=carrier_client.carrier.pk))
    assert carrier_client.post("call.transcript", line("CA10"), secret=new).status_code == 200


def test_a_new_carrier_signing_key_changes_every_secret(carrier_client, number_a):
    carrier_client.post("call.started", started("CA11"))
    old = carrier_client.carrier.secret
    with override_settings(CARRIER_SIGNING_KEY="another-signing-key-for-this-test"):
        assert carrier_client.post("call.transcript", line("CA11"), secret=old).status_code == 401
        new = carrier_secret(Carrier.objects.get(pk=carrier_client.carrier.pk))
        assert new != old
        assert carrier_client.post("call.transcript", line("CA11"), secret=new).status_code == 200
    assert carrier_client.post("call.transcript", line("CA11"), secret=old).status_code == 200


def test_deleted_carrier_is_404_even_after_its_secret_was_used(carrier_client, number_a):
    body = (b'{"id": "x", "type": "call.disclosed", "occurredAt": "2025-03-01T10:00:00Z",'
            b' "data": {"carrierCallId": "Z"}}')
    assert carrier_client.post_raw(body).status_code == 202
    Carrier.objects.filter(pk=carrier_client.carrier.pk).delete()
    response = carrier_client.post_raw(body, signature=signature_header(carrier_client.carrier.secret, body))
    assert response.status_code == 404 and error_of(response)["code"] == "unknown_carrier"
