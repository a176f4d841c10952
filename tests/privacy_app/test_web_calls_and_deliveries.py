"""Exports and erasures reach webhook deliveries and the voice agent's web calls, which
have no number: by the number the caller gave (session variables, transcript) and by
the call's id (issue 31, finding 3)."""
import io
import json

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.test import Client

from calls_app.models import Call, TranscriptEntry
from console.audit.models import AuditEntry
from privacy_app.models import Erasure, Export
from tests.conftest import error_of
from tests.privacy_app.conftest import (
    CALLER,
    GIVEN,
    START,
    attempt_all_due,
    copies_of_number,
    make_lead,
    web_call,
)
from webhooks_app.models import EVENT_TYPES, Delivery
from webhooks_app.services import endpoint_create

pytestmark = pytest.mark.django_db

EXPORTS, ERASURES = "/v2/privacy/exports", "/v2/privacy/erasures"
SECRET_WORDS = "Meine Kundennummer ist vertraulich"


@pytest.fixture
def world(clock, tenant_a, tenant_b, receivers):
    """At tenant A: a lead of the caller, a web call whose session holds the number as
    given, a web call in which the caller said it, a web call of someone else; all
    announced to a failing endpoint (pending deliveries). A web call at tenant B."""
    endpoint_create(tenant=tenant_a, url=receivers[1].url, event_types=list(EVENT_TYPES))
    made = {
        "lead": make_lead(tenant_a),
        "given": web_call(tenant_a, variables={"rueckruf": GIVEN, "name": "Anna"}, lines=[SECRET_WORDS]),
        "said": web_call(tenant_a, lines=["Sie erreichen mich unter 0176-1234567."]),
        "other": web_call(tenant_a, variables={"name": "Bernd"}, lines=["Ich bin jemand anderes."]),
        "at_b": web_call(tenant_b, variables={"rueckruf": GIVEN}),
    }
    attempt_all_due()
    return made


def texts(call):
    return list(TranscriptEntry.objects.filter(call=call).order_by("id").values_list("text", flat=True))


def test_an_export_by_number_holds_the_deliveries_the_sessions_and_the_web_calls(api_a, world):
    response = api_a.post(EXPORTS, {"phone": CALLER}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    document = body["document"]

    assert (body["phone"], body["callId"]) == (CALLER, None)
    assert (document["phone"], document["callId"]) == (CALLER, None)
    assert {call["id"] for call in document["calls"]} == {world["given"].pk, world["said"].pk}
    given = next(call for call in document["calls"] if call["id"] == world["given"].pk)
    assert [line["text"] for line in given["transcript"]] == [SECRET_WORDS]
    sessions = {session["callId"]: session for session in document["agentSessions"]}
    assert set(sessions) == {world["given"].pk, world["said"].pk}
    assert sessions[world["given"].pk] == {
        "sessionId": world["given"].agent_session.pk, "callId": world["given"].pk,
        "createdAt": START.isoformat().replace("+00:00", "Z"), "usedAt": START.isoformat().replace("+00:00", "Z"),
        "assistant": None, "language": "de", "voice": None, "variables": {"rueckruf": GIVEN, "name": "Anna"},
    }
    assert sessions[world["said"].pk]["variables"] == {}
    deliveries = {(d["eventType"], d["payload"]["data"]["id"]): d for d in document["webhookDeliveries"]}
    assert set(deliveries) == {("lead.created", world["lead"].pk), ("call.ended", world["given"].pk),
                               ("call.ended", world["said"].pk)}
    lead_created = deliveries[("lead.created", world["lead"].pk)]
    assert lead_created["payload"]["data"]["phone"] == CALLER
    assert (lead_created["state"], lead_created["attempts"]) == ("pending", 1)


def test_an_export_by_call_id_holds_that_web_call_its_session_and_deliveries(api_a, world):
    call = world["given"]
    response = api_a.post(EXPORTS, {"callId": call.pk}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    document = body["document"]

    assert (body["phone"], body["callId"]) == (None, call.pk)
    assert [c["id"] for c in document["calls"]] == [call.pk] and document["leads"] == []
    assert [s["variables"] for s in document["agentSessions"]] == [{"rueckruf": GIVEN, "name": "Anna"}]
    assert [(d["eventType"], d["payload"]["data"]["id"]) for d in document["webhookDeliveries"]] == [
        ("call.ended", call.pk)]
    assert api_a.get(f"{EXPORTS}/{body['id']}").json()["callId"] == call.pk


def test_an_erasure_by_call_id_empties_that_web_call_only(api_a, world):
    call, other = world["given"], world["other"]
    export = api_a.post(EXPORTS, {"phone": CALLER}, format="json").json()  # holds the call too

    response = api_a.post(ERASURES, {"callId": call.pk}, format="json")
    assert response.status_code == 201, response.content
    counts = response.json()["counts"]

    call.refresh_from_db()
    assert call.redacted and texts(call) == [] and call.agent_session.variables == {}
    assert texts(other) == ["Ich bin jemand anderes."] and other.agent_session.variables == {"name": "Bernd"}
    assert not Export.objects.filter(pk=export["id"]).exists()
    delivery = Delivery.objects.get(event_type="call.ended", payload__contains=call.pk)
    assert delivery.state == "erased"
    assert counts == {"calls": 1, "transcriptLines": 1, "recordingLinks": 0, "carrierEvents": 0, "leads": 0,
                      "exports": 1, "idempotencyRecords": 0, "adminLogEntries": 0, "webhookDeliveries": 1,
                      "agentSessions": 1, "analyses": 0, "campaignContacts": 0, "blocklistEntries": 0, "sms": 0, "appointments": 0}
    # The lead with the number is not this call's: it stays until the number is erased.
    assert copies_of_number(CALLER) >= {("leads_app_lead", "phone", world["lead"].pk)}


def test_an_erasure_by_number_finds_the_web_calls_by_what_the_caller_gave(api_a, world, tenant_b):
    response = api_a.post(ERASURES, {"phone": GIVEN}, format="json")
    assert response.status_code == 201, response.content

    assert texts(world["given"]) == [] and texts(world["said"]) == []
    assert Call.objects.get(pk=world["said"].pk).redacted
    assert texts(world["other"]) == ["Ich bin jemand anderes."]
    # Tenant B's session with the same number is B's to erase.
    assert copies_of_number(CALLER) == {("agent_app_agentsession", "variables", world["at_b"].agent_session.pk)}


@pytest.mark.parametrize("url", [EXPORTS, ERASURES])
def test_a_call_id_must_name_a_call_of_the_tenant_and_comes_alone(api_a, world, url):
    for body, field in (({"callId": "cl_unknown"}, "callId"), ({"callId": world["at_b"].pk}, "callId"),
                        ({"callId": world["given"].pk, "phone": CALLER}, "callId"), ({"callId": 7}, "callId"),
                        ({}, "phone")):
        response = api_a.post(url, body, format="json")
        assert response.status_code == 400, body
        assert field in error_of(response)["details"], body
    assert not Export.objects.exists() and not Erasure.objects.exists() and not AuditEntry.objects.exists()


def test_the_commands_take_a_call_id(world, tenant_a):
    call = world["said"]
    call_command("privacy_export", "acme", call.pk, stdout=(out := io.StringIO()))
    assert [c["id"] for c in json.loads(out.getvalue())["calls"]] == [call.pk]
    call_command("privacy_erase", "acme", call.pk, stdout=(out := io.StringIO()))
    assert json.loads(out.getvalue())["counts"]["transcriptLines"] == 1 and texts(call) == []


def test_the_admin_exports_and_erases_one_call(owner, world, tenant_a, tenant_b):
    owner.user_permissions.set(Permission.objects.filter(content_type__app_label="privacy_app"))
    client = Client()
    client.force_login(owner)
    call = world["given"]

    response = client.post("/admin/privacy_app/export/add/", {"tenant": tenant_a.pk, "call_id": call.pk})
    export = Export.objects.get()
    assert response.status_code == 302 and (export.call_id, export.phone) == (call.pk, "")
    assert [s["callId"] for s in export.document["agentSessions"]] == [call.pk]

    for body in ({"tenant": tenant_a.pk, "call_id": call.pk, "phone": CALLER}, {"tenant": tenant_a.pk},
                 {"tenant": tenant_a.pk, "call_id": world["at_b"].pk}):
        page = client.post("/admin/privacy_app/erasure/add/", body)
        assert page.status_code == 200 and not Erasure.objects.exists(), body
    response = client.post("/admin/privacy_app/erasure/add/", {"tenant": tenant_a.pk, "call_id": call.pk,
                                                               "confirm": call.pk})
    assert response.status_code == 302 and Erasure.objects.get().counts["agentSessions"] == 1
    assert texts(call) == [] and not Export.objects.exists()
