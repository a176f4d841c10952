"""Carrier events that answered 500 once: times without offset or at the edge of the
calendar, garbage in X-Signature, deep nesting, NUL and lone surrogates."""
import json
from datetime import UTC, datetime

import pytest

from calls_app.models import Call, CarrierEvent, TranscriptEntry
from calls_app.signing import signature_header
from tests.calls_app.conftest import CALLER, NUMBER_A
from tests.conftest import error_of

pytestmark = pytest.mark.django_db


def started(ccid):
    return {"carrierCallId": ccid, "direction": "inbound", "from": CALLER, "to": NUMBER_A}


def test_occurred_at_without_offset_is_taken_as_utc(carrier_client, number_a):
    response = carrier_client.post("call.started", started("CA1"), occurred_at="2026-11-01T10:00:00")
    assert response.status_code == 200, response.content
    assert Call.objects.get().started_at == datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


def test_transcript_ts_without_offset_is_taken_as_utc(carrier_client, number_a):
    carrier_client.post("call.started", started("CA2"))
    response = carrier_client.post("call.transcript", {"carrierCallId": "CA2", "role": "user", "text": "Hallo",
                                                       "ts": "2026-11-01T10:00:05"})
    assert response.status_code == 200, response.content
    assert TranscriptEntry.objects.get().ts == datetime(2026, 11, 1, 10, 0, 5, tzinfo=UTC)


def test_offsets_are_converted_to_utc(carrier_client, number_a):
    carrier_client.post("call.started", started("CA3"), occurred_at="2026-11-01T10:00:00+09:30")
    assert Call.objects.get().started_at == datetime(2026, 11, 1, 0, 30, tzinfo=UTC)


@pytest.mark.parametrize("when", [
    "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z",
    "1969-12-31T23:59:59Z", "2025-02-30T10:00:00Z", "2025-03-01T25:00:00Z", "2025-03-01", "", "now",
    "2025-03-01T10:00:00" + "0" * 5000, 1740823200, None,
])
def test_times_at_the_edge_of_the_calendar_or_invalid_are_field_errors(carrier_client, number_a, when):
    carrier_client.post("call.started", started("CA4"))
    response = carrier_client.send({"id": "evt_1", "type": "call.transcript", "occurredAt": when,
                                    "data": {"carrierCallId": "CA4", "role": "user", "text": "Hallo", "ts": when}})
    assert response.status_code == 400, response.content
    error = error_of(response)
    assert error["code"] == "validation_error"
    assert set(error["details"]) == {"occurredAt", "data.ts"}
    assert "without offset is UTC" in error["details"]["data.ts"][0]
    assert not TranscriptEntry.objects.exists() and CarrierEvent.objects.count() == 1


@pytest.mark.parametrize("signature", [
    "t=\u00b2,v1=00", "t=" + "9" * 4301 + ",v1=00", "t=1,v1=\u00e9", "t=\u0661\u0662,v1=00", "t=1,v1=" + "a" * 5000,
    "t=-1,v1=00", "t=1.5,v1=00", "t= ,v1=00", "\u00e9" * 10,
])
def test_garbage_in_x_signature_is_401_before_any_check(carrier_client, number_a, signature):
    # Headers reach Django as Latin-1 text: the UTF-8 bytes of the header, as a server passes them.
    header = signature.encode("utf-8").decode("latin-1")
    response = carrier_client.post("call.started", started("CA5"), signature=header)
    assert response.status_code == 401, response.content
    assert error_of(response)["code"] == "invalid_signature"
    assert not CarrierEvent.objects.exists()


def test_a_valid_v1_beside_a_garbage_one_still_verifies(carrier_client, number_a):
    body = json.dumps(carrier_client.event("call.started", started("CA6"))).encode()
    good = signature_header(carrier_client.carrier.secret, body)
    response = carrier_client.post_raw(body, signature=good + ",v1=zz")
    assert response.status_code == 200


@pytest.mark.parametrize("body", [
    b"[" * 3000 + b"]" * 3000,
    b'{"id": "e1", "type": "call.disclosed", "data": ' + b"[" * 100 + b"]" * 100 + b"}",
])
def test_deeply_nested_json_is_malformed(carrier_client, body):
    response = carrier_client.post_raw(body)
    assert response.status_code == 400 and error_of(response)["code"] == "malformed_json"


@pytest.mark.parametrize("text, field", [
    ('"Hallo \\ud800 Welt"', "data.text"),
    ('"Hallo \\udfff"', "data.text"),
    ('"Hallo \\u0000 Welt"', "data.text"),
])
def test_nul_and_lone_surrogates_in_strings_are_field_errors(carrier_client, number_a, text, field):
    carrier_client.post("call.started", started("CA7"))
    template = json.dumps(carrier_client.event(
        "call.transcript", {"carrierCallId": "CA7", "role": "user", "text": "PLACEHOLDER", "ts": "2026-01-01T00:00:00Z"}))
    response = carrier_client.post_raw(template.replace('"PLACEHOLDER"', text).encode())
    assert response.status_code == 400, response.content
    error = error_of(response)
    assert error["code"] == "validation_error" and list(error["details"]) == [field]
    assert not TranscriptEntry.objects.exists()


@pytest.mark.parametrize("event_id", ["evt\\u0000", "evt\\ud800"])
def test_nul_or_surrogate_in_the_event_id_is_a_field_error(carrier_client, event_id):
    body = '{"id": "%s", "type": "call.disclosed", "occurredAt": "2026-01-01T00:00:00Z", ' \
           '"data": {"carrierCallId": "CA8"}}' % event_id
    response = carrier_client.post_raw(body.encode())
    assert response.status_code == 400 and list(error_of(response)["details"]) == ["id"]
    assert not CarrierEvent.objects.exists()


def test_a_properly_paired_surrogate_is_an_ordinary_character(carrier_client, number_a):
    carrier_client.post("call.started", started("CA9"))
    template = json.dumps(carrier_client.event(
        "call.transcript", {"carrierCallId": "CA9", "role": "user", "text": "X", "ts": "2026-01-01T00:00:00Z"}))
    response = carrier_client.post_raw(template.replace('"X"', '"Daumen \\ud83d\\udc4d"').encode())
    assert response.status_code == 200
    assert TranscriptEntry.objects.get().text == "Daumen \U0001f44d"
