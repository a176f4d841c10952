"""What stored carrier events keep of personal data (calls_app.redaction), the call's
`redacted` flag, and late events of a redacted call."""
import pytest

from calls_app import event_sql, redaction
from calls_app.models import Call, CarrierEvent, TranscriptEntry, UsageCounter
from tests.calls_app.conftest import CALLER, NUMBER_A

pytestmark = pytest.mark.django_db


def started(ccid, caller=CALLER):
    return {"carrierCallId": ccid, "direction": "inbound", "from": caller, "to": NUMBER_A}


def line(ccid, text="Meine Kundennummer ist 4711."):
    return {"carrierCallId": ccid, "role": "user", "text": text, "ts": "2025-03-01T10:00:09+01:00"}


def ended(ccid, seconds=61, recording="https://carrier.example/rec/1.mp3"):
    return {"carrierCallId": ccid, "status": "completed", "seconds": seconds, "recordingUrl": recording}


def event_data(ccid, event_type):
    return CarrierEvent.objects.get(carrier_call_id=ccid, type=event_type).data


def redact(call):
    Call.objects.filter(pk=call.pk).update(redacted=True, from_e164="anon-test0000000")


def test_a_call_shows_redacted_false_until_content_is_removed(api_a, carrier_client, number_a):
    carrier_client.post("call.started", started("CA1"))
    call = Call.objects.get()
    assert api_a.get(f"/v2/calls/{call.pk}").json()["redacted"] is False
    redact(call)
    assert api_a.get("/v2/calls").json()["calls"][0]["redacted"] is True


def test_with_transcription_off_the_stored_event_keeps_no_text(carrier_client, number_a, tenant_a):
    tenant_a.transcription_enabled = False
    tenant_a.save(update_fields=["transcription_enabled"])
    carrier_client.post("call.started", started("CA2"))
    assert carrier_client.post("call.transcript", line("CA2")).json()["state"] == "applied"
    assert event_data("CA2", "call.transcript")["text"] == ""
    assert not TranscriptEntry.objects.exists()


def test_with_transcription_off_a_pending_line_loses_its_text_when_applied(carrier_client, number_a, tenant_a):
    tenant_a.transcription_enabled = False
    tenant_a.save(update_fields=["transcription_enabled"])
    assert carrier_client.post("call.transcript", line("CA3")).status_code == 202
    assert event_data("CA3", "call.transcript")["text"]  # kept while it waits for its call
    carrier_client.post("call.started", started("CA3"))
    assert event_data("CA3", "call.transcript")["text"] == ""


def test_with_recording_off_the_stored_end_keeps_no_recording_link(carrier_client, number_a):
    carrier_client.post("call.started", started("CA4"))
    carrier_client.post("call.ended", ended("CA4"))
    assert Call.objects.get().recording_url == ""
    assert event_data("CA4", "call.ended")["recordingUrl"] == ""


def test_with_recording_on_the_link_is_kept(carrier_client, number_a, tenant_a):
    tenant_a.recording_enabled = True
    tenant_a.save(update_fields=["recording_enabled"])
    carrier_client.post("call.started", started("CA5"))
    carrier_client.post("call.ended", ended("CA5"))
    assert Call.objects.get().recording_url == event_data("CA5", "call.ended")["recordingUrl"] != ""


def test_a_late_line_of_a_redacted_call_is_acknowledged_but_not_kept(carrier_client, number_a):
    carrier_client.post("call.started", started("CA6"))
    redact(Call.objects.get())
    response = carrier_client.post("call.transcript", line("CA6"))
    assert response.json() == {"received": True, "state": "applied"}
    assert not TranscriptEntry.objects.exists()
    assert event_data("CA6", "call.transcript")["text"] == ""


def test_a_line_racing_an_erasure_is_not_kept(carrier_client, number_a, monkeypatch):
    """The hot path read the call before the erasure committed: the insert itself
    checks again, and the stored event loses its text."""
    carrier_client.post("call.started", started("CA7"))
    call = Call.objects.get()
    redact(call)
    monkeypatch.setattr(event_sql, "started_call", lambda carrier_id, ccid: (call.pk, True))
    assert carrier_client.post("call.transcript", line("CA7")).json()["state"] == "applied"
    assert not TranscriptEntry.objects.exists()
    assert event_data("CA7", "call.transcript")["text"] == ""


def test_the_end_of_a_redacted_call_books_usage_but_keeps_no_link(carrier_client, number_a, tenant_a):
    tenant_a.recording_enabled = True
    tenant_a.save(update_fields=["recording_enabled"])
    carrier_client.post("call.started", started("CA8"))
    redact(Call.objects.get())
    carrier_client.post("call.ended", ended("CA8", seconds=61))
    call = Call.objects.get()
    assert (call.status, call.seconds, call.recording_url) == ("completed", 61, "")
    assert event_data("CA8", "call.ended")["recordingUrl"] == ""
    assert UsageCounter.objects.get().minutes == 2


@pytest.fixture
def erased_caller(monkeypatch):
    """A lookup that says CALLER was erased (as privacy_app's does after an erasure)."""
    monkeypatch.setattr(redaction, "_erased_caller_lookups", [])
    redaction.register_erased_caller_lookup(
        lambda *, tenant, e164, occurred_at: "anon-erased00000" if e164 == CALLER else None)


def test_a_late_start_of_an_erased_callers_call_is_stored_redacted(carrier_client, number_a, erased_caller):
    assert carrier_client.post("call.transcript", line("CA9")).status_code == 202
    carrier_client.post("call.started", started("CA9"))
    carrier_client.post("call.ended", ended("CA9"))
    call = Call.objects.get()
    assert (call.from_e164, call.redacted, call.seconds) == ("anon-erased00000", True, 61)
    assert not TranscriptEntry.objects.exists()
    assert event_data("CA9", "call.started")["from"] == "anon-erased00000"
    assert event_data("CA9", "call.transcript")["text"] == ""


def test_another_callers_call_is_stored_as_it_comes(carrier_client, number_a, erased_caller):
    carrier_client.post("call.started", started("CA10", caller="+491769999999"))
    carrier_client.post("call.transcript", line("CA10"))
    call = Call.objects.get()
    assert (call.from_e164, call.redacted) == ("+491769999999", False)
    assert TranscriptEntry.objects.get().text == "Meine Kundennummer ist 4711."


def test_stripped_leaves_the_events_own_data_alone():
    data = line("CA11")
    assert redaction.stripped("call.transcript", data, keep_text=False)["text"] == ""
    assert data["text"] == "Meine Kundennummer ist 4711."
