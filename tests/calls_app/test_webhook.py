import json
import random
import time

import pytest

from calls_app.models import Call, CarrierEvent, TranscriptEntry, UsageCounter
from tests.calls_app.conftest import CALLER, NUMBER_A
from tests.conftest import error_of

pytestmark = pytest.mark.django_db


def started(ccid, to=NUMBER_A):
    return {"carrierCallId": ccid, "direction": "inbound", "from": CALLER, "to": to}


def test_inbound_call_lifecycle_is_stored_once_with_events_twice_and_shuffled(carrier_client, number_a, api_a):
    events = carrier_client.inbound_call("CA1", seconds=125) * 2
    random.Random(5).shuffle(events)
    statuses = [carrier_client.send(event).status_code for event in events]
    assert set(statuses) <= {200, 202}
    call = Call.objects.get()
    assert (call.tenant_id, call.direction, call.status, call.seconds, call.disclosed) == (
        number_a.tenant_id, "inbound", "completed", 125, True)
    assert [e.role for e in call.transcript_entries.all()] == ["assistant", "system", "user"]
    assert not CarrierEvent.objects.filter(state="pending").exists()
    usage = api_a.get("/v2/usage").json()
    assert (usage["minutesThisMonth"], usage["secondsThisMonth"]) == (3, 125)


def test_events_before_call_started_are_pending_then_applied(carrier_client, number_a):
    ended = carrier_client.post("call.ended", {"carrierCallId": "CA2", "status": "completed", "seconds": 61})
    line = carrier_client.post("call.transcript", {"carrierCallId": "CA2", "role": "user", "text": "Hallo",
                                                   "ts": "2025-03-01T10:00:00Z"})
    assert (ended.status_code, line.status_code) == (202, 202)
    assert ended.json() == {"received": True, "state": "pending"}
    assert not Call.objects.exists()
    assert carrier_client.post("call.started", started("CA2")).status_code == 200
    call = Call.objects.get()
    assert (call.status, call.seconds, call.transcript_entries.count()) == ("completed", 61, 1)
    assert UsageCounter.objects.get().minutes == 2


def test_replayed_event_id_answers_200_and_changes_nothing(carrier_client, number_a):
    carrier_client.post("call.started", started("CA3"))
    event = carrier_client.event("call.transcript", {"carrierCallId": "CA3", "role": "user", "text": "Hi",
                                                     "ts": "2025-03-01T10:00:00Z"})
    assert carrier_client.send(event).status_code == 200
    again = carrier_client.send(event)
    assert again.status_code == 200 and again.json()["state"] == "duplicate"
    assert TranscriptEntry.objects.count() == 1


def test_second_call_ended_under_another_event_id_counts_usage_once(carrier_client, number_a):
    carrier_client.post("call.started", started("CA4"))
    for seconds in (30, 600):
        carrier_client.post("call.ended", {"carrierCallId": "CA4", "status": "completed", "seconds": seconds})
    assert Call.objects.get().seconds == 30
    assert (UsageCounter.objects.get().minutes, UsageCounter.objects.get().calls) == (1, 1)


def test_call_started_for_a_number_no_tenant_owns_is_404_and_stores_nothing(carrier_client, number_a):
    response = carrier_client.post("call.started", started("CA5", to="+493099988877"))
    assert response.status_code == 404 and error_of(response)["code"] == "unknown_number"
    assert not Call.objects.exists() and not CarrierEvent.objects.exists()


def test_outbound_call_started_for_unknown_call_id_is_404(carrier_client):
    response = carrier_client.post("call.started", {"carrierCallId": "CA6", "direction": "outbound",
                                                    "callId": "cl_doesnotexist"})
    assert response.status_code == 404 and error_of(response)["code"] == "unknown_call"


@pytest.mark.parametrize("signature", ["", "t=123", "v1=abc", "garbage", "t=abc,v1=00"])
def test_missing_or_malformed_signature_is_401(carrier_client, number_a, signature):
    response = carrier_client.post("call.started", started("CA7"), signature=signature)
    assert response.status_code == 401 and error_of(response)["code"] == "invalid_signature"
    assert not Call.objects.exists()


def test_event_signed_with_another_secret_is_401(carrier_client, number_a):
    response = carrier_client.post("call.started", started("CA8"), secret="not-the-secret")
    assert response.status_code == 401 and error_of(response)["code"] == "invalid_signature"


def test_body_changed_after_signing_is_401(carrier_client, number_a):
    body = json.dumps(carrier_client.event("call.started", started("CA9"))).encode()
    from calls_app.signing import signature_header
    signature = signature_header(carrier_client.carrier.secret, body)
    response = carrier_client.post_raw(body.replace(b"CA9", b"CA0"), signature=signature)
    assert response.status_code == 401


@pytest.mark.parametrize("offset", [-301, 301])
def test_timestamp_more_than_300_seconds_away_is_401(carrier_client, number_a, offset):
    response = carrier_client.post("call.started", started("CA10"), timestamp=int(time.time()) + offset)
    assert response.status_code == 401 and error_of(response)["code"] == "stale_signature"


def test_unknown_carrier_is_404(client):
    response = client.post("/voice/webhook/nobody", b"{}", content_type="application/json", HTTP_X_SIGNATURE="t=1,v1=a")
    assert response.status_code == 404 and error_of(response)["code"] == "unknown_carrier"


def test_malformed_json_is_400(carrier_client):
    response = carrier_client.post_raw(b"{not json")
    assert response.status_code == 400 and error_of(response)["code"] == "malformed_json"


def test_unknown_event_type_is_400_and_stores_nothing(carrier_client):
    response = carrier_client.post("call.exploded", {"carrierCallId": "CA11"})
    assert response.status_code == 400 and error_of(response)["code"] == "unknown_event_type"
    assert not CarrierEvent.objects.exists()


@pytest.mark.parametrize("seconds", [-1, 86401, 1.5, "60", True, None])
def test_negative_absurd_or_non_integer_seconds_are_400(carrier_client, seconds):
    response = carrier_client.post("call.ended", {"carrierCallId": "CA12", "status": "completed", "seconds": seconds})
    assert response.status_code == 400
    assert "data.seconds" in error_of(response)["details"]
    assert not CarrierEvent.objects.exists()


@pytest.mark.parametrize("data, field", [
    ({"carrierCallId": "CA13", "direction": "inbound", "from": CALLER, "to": "12"}, "data.to"),
    ({"carrierCallId": "CA13", "direction": "sideways", "from": CALLER, "to": NUMBER_A}, "data.direction"),
    ({"direction": "inbound", "from": CALLER, "to": NUMBER_A}, "data.carrierCallId"),
])
def test_invalid_call_started_data_is_a_field_error(carrier_client, data, field):
    response = carrier_client.post("call.started", data)
    assert response.status_code == 400 and field in error_of(response)["details"]


def test_missing_occurred_at_is_a_field_error(carrier_client):
    response = carrier_client.send({"id": "e1", "type": "call.disclosed", "data": {"carrierCallId": "x"}})
    assert response.status_code == 400 and "occurredAt" in error_of(response)["details"]


def test_withheld_caller_id_is_stored_as_empty_from(carrier_client, number_a):
    data = {**started("CA14"), "from": "anonymous"}
    assert carrier_client.post("call.started", data).status_code == 200
    assert Call.objects.get().from_e164 == ""


def test_transcript_is_not_kept_when_transcription_was_off_at_call_start(carrier_client, number_a, tenant_a):
    tenant_a.transcription_enabled = False
    tenant_a.save(update_fields=["transcription_enabled"])
    for event in carrier_client.inbound_call("CA15"):
        carrier_client.send(event)
    call = Call.objects.get()
    assert call.transcription_enabled is False and call.transcript_entries.count() == 0


def test_recording_url_is_kept_only_when_recording_was_on(carrier_client, number_a, tenant_a):
    ended = {"status": "completed", "seconds": 10, "recordingUrl": "https://carrier.example/rec/1.mp3"}
    carrier_client.post("call.started", started("CA16"))
    carrier_client.post("call.ended", {"carrierCallId": "CA16", **ended})
    tenant_a.recording_enabled = True
    tenant_a.save(update_fields=["recording_enabled"])
    carrier_client.post("call.started", started("CA17"))
    carrier_client.post("call.ended", {"carrierCallId": "CA17", **ended})
    urls = dict(Call.objects.values_list("carrier_call_id", "recording_url"))
    assert urls == {"CA16": "", "CA17": "https://carrier.example/rec/1.mp3"}


def test_switch_changed_during_a_call_keeps_the_setting_of_its_start(carrier_client, number_a, tenant_a):
    carrier_client.post("call.started", started("CA18"))
    tenant_a.transcription_enabled = False
    tenant_a.save(update_fields=["transcription_enabled"])
    carrier_client.post("call.transcript", {"carrierCallId": "CA18", "role": "user", "text": "Hallo",
                                            "ts": "2025-03-01T10:00:00Z"})
    assert Call.objects.get().transcript_entries.count() == 1


def test_the_log_line_of_an_unowned_number_shows_it_masked(carrier_client, number_a, caplog):
    with caplog.at_level("WARNING", logger="calls_app.webhook"):
        carrier_client.post("call.started", started("CA5b", to="+493099988877"))
    assert "+49309•••••77" in caplog.text
    assert "3099988877" not in caplog.text
