"""What the assistants wrote about a caller goes with the caller's data: an erasure by
caller deletes the analyses of their calls and of calls that took a callback for their
number, and the tool notes naming their number in other callers' calls; the transcript
period takes the analyses' content."""
import datetime as dt

import pytest
from django.utils import timezone

from calls_app.analysis import call_analyze
from calls_app.models import Call, CallAnalysis, Carrier, TranscriptEntry
from calls_app.services import call_callback_create
from console.assistants.models import Assistant
from privacy_app.services import erasure_create, retention_apply, retention_settings_update

pytestmark = pytest.mark.django_db

CALLER = "+4917612345678"
OTHER = "+4915112345670"


def ended_call(tenant, carrier, caller, *, started, lines=()):
    call = Call.objects.create(tenant=tenant, carrier=carrier, carrier_call_id=f"c-{caller}-{started:%s}",
                               direction="inbound", from_e164=caller, to_e164="+493055501234", status="active",
                               started_at=started, assistant=Assistant.objects.get(tenant=tenant))
    for offset, (role, text) in enumerate(lines):
        TranscriptEntry.objects.create(call=call, role=role, text=text, ts=started + dt.timedelta(seconds=offset))
    return call


def end(call):
    Call.objects.filter(pk=call.pk).update(status="completed", ended_at=call.started_at + dt.timedelta(minutes=1),
                                           seconds=60)
    return call_analyze(call_id=call.pk)


@pytest.fixture
def world(tenant_a):
    Assistant.objects.create(tenant=tenant_a, name="Empfang", tools=["create_callback"],
                             analysis_schema={"type": "object", "properties": {"phone": {"type": "string"}}})
    carrier = Carrier.objects.create(id="sim-test", secret_nonce="n")
    now = timezone.now()
    own = ended_call(tenant_a, carrier, CALLER, started=now, lines=[("user", "Mein Anliegen ist privat.")])
    # Someone else calls and leaves a callback request for the caller's number.
    other = ended_call(tenant_a, carrier, OTHER, started=now + dt.timedelta(minutes=5),
                       lines=[("user", "Rufen Sie bitte meine Frau zurück.")])
    call_callback_create(call_id=other.pk, phone=CALLER)
    TranscriptEntry.objects.create(call=other, role="system", text=f"Tool create_callback: Rückruf an {CALLER}.",
                                   ts=now + dt.timedelta(minutes=6))
    unrelated = ended_call(tenant_a, carrier, "+4915199999990", started=now + dt.timedelta(minutes=9),
                           lines=[("user", "Wann haben Sie geöffnet?")])
    return {"own": end(own), "other": end(other), "unrelated": end(unrelated), "other_call": other}


def test_an_erasure_takes_the_analyses_and_tool_notes_that_name_the_caller(world, tenant_a):
    receipt = erasure_create(tenant=tenant_a, e164=CALLER, actor="tests")

    assert receipt.counts["analyses"] == 2
    assert list(CallAnalysis.objects.values_list("pk", flat=True)) == [world["unrelated"].pk]
    lines = list(TranscriptEntry.objects.filter(call=world["other_call"]).values_list("text", flat=True))
    assert lines == ["Rufen Sie bitte meine Frau zurück."]  # the other caller's own words stay
    assert not TranscriptEntry.objects.filter(text__contains=CALLER).exists()


def test_the_transcript_period_takes_the_analyses_content_and_keeps_what_happened(world, tenant_a):
    retention_settings_update(tenant=tenant_a, transcript_days=30)
    Call.objects.filter(pk=world["own"].pk).update(created_at=timezone.now() - dt.timedelta(days=31))

    counts = retention_apply(tenant=tenant_a)

    assert counts["analyses"] == 1
    kept = CallAnalysis.objects.get(pk=world["own"].pk)
    assert (kept.summary, kept.structured, kept.structured_errors, kept.outcome) == ("", None, [], ["answered"])
    assert CallAnalysis.objects.get(pk=world["other"].pk).summary
    assert retention_apply(tenant=tenant_a)["analyses"] == 0
