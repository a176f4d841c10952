"""Erasure by caller (Art. 17): afterwards no row of the tenant holds the number or the
words of the caller's transcripts — searched in every table of the database — while
the calls stay for billing, another tenant's rows stay whole, a second erasure finds
nothing, and late carrier events do not bring anything back."""
import datetime as dt
import io
import json
import uuid

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from calls_app.carriers import sim_carrier
from calls_app.models import Call, CarrierEvent, SimDial, TranscriptEntry, UsageCounter
from calls_app.signing import carrier_secret
from console.audit.models import AuditEntry
from console.pseudonyms import pseudonym_for
from leads_app.models import Lead
from privacy_app.models import ErasedCaller, Erasure
from tests.calls_app.conftest import CarrierClient
from tests.conftest import error_of
from tests.privacy_app.conftest import (
    CALLER,
    CALLER_DIGITS,
    CALLER_NATIONAL,
    NUMBER_A,
    START,
    make_lead,
    play_call,
    rows_containing,
)

pytestmark = pytest.mark.django_db

URL = "/v2/privacy/erasures"
SECRET_WORDS = "Meine Kundennummer ist vertraulich"
OTHER_WORDS = "Bitte nicht weitergeben"
ZERO = {"calls": 0, "transcriptLines": 0, "recordingLinks": 0, "carrierEvents": 0, "leads": 0, "exports": 0,
        "idempotencyRecords": 0, "adminLogEntries": 0, "webhookDeliveries": 0, "agentSessions": 0, "analyses": 0,
        "campaignContacts": 0, "blocklistEntries": 0, "sms": 0, "appointments": 0}


@pytest.fixture
def world(clock, numbers, carrier_client, tenant_a, tenant_b, api_a):
    """Every copy of the caller's data at tenant A — two calls with transcripts and a
    recording, an outbound call (dialled, with an event still waiting for its start),
    a lead posted with an Idempotency-Key, an export, an old admin log entry — plus a
    call of someone else at A, and the same caller's call and lead at tenant B."""
    tenant_a.recording_enabled = True
    tenant_a.save(update_fields=["recording_enabled"])
    made = {
        "calls_a": [play_call(carrier_client, text=SECRET_WORDS), play_call(carrier_client, text=SECRET_WORDS)],
        "other_a": play_call(carrier_client, caller="+4915112345678", text="Jemand anderes"),
        "call_b": play_call(carrier_client, to=numbers[1].e164, text=OTHER_WORDS),
        "lead_b": make_lead(tenant_b),
    }
    lead_post = APIClient().post("/v2/public/leads", {"tenant": "acme", "kind": "callback", "phone": CALLER_NATIONAL},
                            format="json", HTTP_IDEMPOTENCY_KEY="lead-key-1")
    made["lead_a"] = Lead.objects.get(pk=lead_post.json()["id"])
    outbound = api_a.post("/voice/v1/calls", {"to": CALLER}, format="json", HTTP_IDEMPOTENCY_KEY="call-key-1")
    made["outbound"] = Call.objects.get(pk=outbound.json()["id"])
    sim = sim_carrier()
    sim.secret = carrier_secret(sim)
    made["sim"] = CarrierClient(sim)
    waiting = made["sim"].post("call.transcript", {"carrierCallId": made["outbound"].carrier_call_id, "role": "user",
                                                   "text": SECRET_WORDS, "ts": START.isoformat()})
    assert waiting.status_code == 202
    assert api_a.post("/v2/privacy/exports", {"phone": CALLER}, format="json").status_code == 201
    LogEntry.objects.create(  # as the admin wrote them before titles were masked
        user_id=_staff_id(), content_type=ContentType.objects.get_for_model(Lead), object_id=made["lead_a"].pk,
        object_repr=f"Callback {CALLER} (new)", action_flag=CHANGE, change_message="[]")
    return made


def _staff_id():
    from django.contrib.auth import get_user_model
    return get_user_model().objects.create_user("admin-old", is_staff=True).pk


def usage():
    return list(UsageCounter.objects.order_by("tenant_id", "period").values_list(
        "tenant_id", "period", "minutes", "seconds", "calls", "reserved_minutes"))


def rows_of_tenant_b(world):
    call_b = world["call_b"]
    started_b = CarrierEvent.objects.get(carrier_call_id=call_b.carrier_call_id, type="call.started")
    return {("calls_app_call", call_b.pk), ("calls_app_carrierevent", str(started_b.pk)),
            ("leads_app_lead", world["lead_b"].pk)}


def erase(api, phone):
    response = api.post(URL, {"phone": phone}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_before_the_erasure_the_search_finds_every_copy(world):
    """The search itself works: it finds the number and the words in all their places."""
    tables = {table for table, _ in rows_containing(CALLER_DIGITS)}
    assert {"calls_app_call", "calls_app_carrierevent", "leads_app_lead", "calls_app_simdial",
            "privacy_app_export", "django_admin_log"} <= tables
    assert {table for table, _ in rows_containing(SECRET_WORDS)} == {
        "calls_app_transcriptentry", "calls_app_carrierevent", "privacy_app_export"}


def test_afterwards_no_row_of_the_tenant_holds_the_number_or_the_words(api_a, world):
    usage_before = usage()

    receipt = erase(api_a, CALLER_NATIONAL)

    assert rows_containing(CALLER_DIGITS) == rows_of_tenant_b(world)
    assert rows_containing(SECRET_WORDS) == set()
    assert rows_containing(pseudonym_for(tenant=world["lead_b"].tenant, e164=CALLER)) == set()
    assert receipt["counts"] == {"calls": 3, "transcriptLines": 4, "recordingLinks": 2, "carrierEvents": 9,
                                 "leads": 1, "exports": 1, "idempotencyRecords": 2, "adminLogEntries": 1,
                                 "webhookDeliveries": 0, "agentSessions": 0, "analyses": 0,
                                 "campaignContacts": 0, "blocklistEntries": 0, "sms": 0, "appointments": 0}
    assert usage() == usage_before


def test_the_calls_stay_for_billing_under_one_pseudonym(api_a, world, tenant_a):
    reserved = world["outbound"].reserved_minutes
    erase(api_a, CALLER)
    pseudonym = pseudonym_for(tenant=tenant_a, e164=CALLER)
    assert pseudonym.startswith("anon-") and len(pseudonym) == 16
    for call in world["calls_a"]:
        call.refresh_from_db()
        assert (call.from_e164, call.seconds, call.status, call.redacted, call.recording_url) == (
            pseudonym, 125, "completed", True, "")
    outbound = Call.objects.get(pk=world["outbound"].pk)
    assert (outbound.to_e164, outbound.redacted, outbound.reserved_minutes) == (pseudonym, True, reserved)
    assert SimDial.objects.get(call=outbound).to_e164 == pseudonym
    listed = {c["id"]: c for c in api_a.get("/v2/calls").json()["calls"]}
    assert listed[world["calls_a"][0].pk]["transcript"] == [] and listed[world["calls_a"][0].pk]["redacted"]
    other = listed[world["other_a"].pk]
    assert (other["from_e164"], other["redacted"], len(other["transcript"])) == ("+4915112345678", False, 2)
    call_command("recompute_usage", "--dry-run", stdout=(out := io.StringIO()))
    assert "No drift" in out.getvalue()


def test_another_tenants_rows_with_the_same_number_stay_whole(api_a, api_b, world):
    erase(api_a, CALLER)
    [call_b] = api_b.get("/v2/calls").json()["calls"]
    assert call_b["from_e164"] == CALLER and OTHER_WORDS in [line["text"] for line in call_b["transcript"]]
    assert [lead["phone"] for lead in api_b.get("/v2/leads").json()["leads"]] == [CALLER]
    assert len(rows_containing(OTHER_WORDS)) == 2  # B's transcript line and its stored event


def test_a_second_erasure_is_a_no_op_with_counts_zero(api_a, world):
    first = erase(api_a, CALLER)
    snapshot = rows_containing("anon-")
    second = erase(api_a, "+49 176 1234567")
    assert second["counts"] == ZERO and second["id"] != first["id"]
    assert rows_containing("anon-") == snapshot
    assert Erasure.objects.count() == 2


def test_the_receipt_names_no_one(api_a, world, tenant_a):
    receipt = erase(api_a, CALLER)
    assert set(receipt) == {"id", "erasedAt", "counts"} and receipt["id"].startswith("er_")
    text = json.dumps(receipt)
    assert CALLER_DIGITS not in text and "anon-" not in text
    assert api_a.get(f"{URL}/{receipt['id']}").json() == receipt
    assert api_a.get(URL).json() == {"erasures": [receipt]}


def test_the_erasure_is_in_the_audit_trail_without_the_number(api_a, key_a, world, tenant_a):
    receipt = erase(api_a, CALLER)
    [entry] = AuditEntry.objects.filter(action="privacy.erasure")
    assert (entry.object_id, entry.tenant, entry.details) == (receipt["id"], tenant_a, receipt["counts"])
    assert entry.actor == f"key:{key_a[:16]}"
    assert not AuditEntry.objects.filter(action__startswith="POST /v2/privacy/erasures").exists()


def test_a_replay_of_an_erased_lead_post_does_not_bring_it_back(api_a, world):
    erase(api_a, CALLER)
    replay = APIClient().post("/v2/public/leads", {"tenant": "acme", "kind": "callback", "phone": CALLER_NATIONAL},
                         format="json", HTTP_IDEMPOTENCY_KEY="lead-key-1")
    assert replay.status_code == 409
    assert not Lead.objects.filter(tenant__slug="acme").exists()


def test_late_events_of_an_erased_call_do_not_bring_the_data_back(api_a, world, carrier_client, clock):
    erase(api_a, CALLER)
    call = world["calls_a"][0]
    ccid = call.carrier_call_id
    when = clock().isoformat()
    # A carrier retrying events of the erased call under new ids:
    assert carrier_client.post("call.transcript", {"carrierCallId": ccid, "role": "user", "text": SECRET_WORDS,
                                                   "ts": when}).status_code == 200
    carrier_client.post("call.started", {"carrierCallId": ccid, "direction": "inbound", "from": CALLER,
                                         "to": NUMBER_A})
    carrier_client.post("call.ended", {"carrierCallId": ccid, "status": "completed", "seconds": 125,
                                       "recordingUrl": "https://carrier.example/rec/again.mp3"})
    # The waiting event of the outbound call, applied when its start arrives now:
    outbound = world["outbound"]
    world["sim"].post("call.started", {"carrierCallId": outbound.carrier_call_id, "direction": "outbound",
                                       "callId": outbound.pk})
    assert rows_containing(CALLER_DIGITS) == rows_of_tenant_b(world)
    assert rows_containing(SECRET_WORDS) == set()
    assert not TranscriptEntry.objects.filter(call__in=[call, outbound]).exists()


def test_a_late_start_of_a_call_made_before_the_erasure_is_stored_redacted(api_a, world, carrier_client, clock,
                                                                             tenant_a):
    before = clock() - dt.timedelta(minutes=5)
    ccid = f"CA{uuid.uuid4().hex}"
    line = {"carrierCallId": ccid, "role": "user", "text": SECRET_WORDS, "ts": before.isoformat()}
    assert carrier_client.post("call.transcript", line).status_code == 202  # waits for its call.started
    erase(api_a, CALLER)
    carrier_client.post("call.started", {"carrierCallId": ccid, "direction": "inbound", "from": CALLER,
                                         "to": NUMBER_A}, occurred_at=before.isoformat())
    late = Call.objects.get(carrier_call_id=ccid)
    assert (late.from_e164, late.redacted) == (pseudonym_for(tenant=tenant_a, e164=CALLER), True)
    assert rows_containing(SECRET_WORDS) == set()
    assert rows_containing(CALLER_DIGITS) == rows_of_tenant_b(world)


def test_a_new_call_after_the_erasure_is_kept_as_usual(api_a, world, carrier_client, clock):
    erase(api_a, CALLER)
    clock.set(clock() + dt.timedelta(minutes=1))
    new = play_call(carrier_client, text="Ich rufe wieder an")
    assert (new.from_e164, new.redacted) == (CALLER, False)
    assert TranscriptEntry.objects.filter(call=new).count() == 2
    assert ErasedCaller.objects.count() == 1


def test_each_tenant_has_its_own_pseudonym(api_a, api_b, world, tenant_a, tenant_b):
    erase(api_a, CALLER)
    erase(api_b, CALLER)
    pseudonyms = {pseudonym_for(tenant=tenant_a, e164=CALLER), pseudonym_for(tenant=tenant_b, e164=CALLER)}
    assert len(pseudonyms) == 2
    callers = {call.from_e164 if call.direction == "inbound" else call.to_e164
               for call in Call.objects.filter(redacted=True)}
    assert callers == pseudonyms
    assert rows_containing(CALLER_DIGITS) == set()


@pytest.mark.parametrize(("body", "field"), [({"phone": "abc"}, "phone"), ({}, "phone"),
                                             ({"phone": NUMBER_A}, "phone"), ({"phone": CALLER, "x": 1}, "x")])
def test_a_bad_request_erases_nothing(api_a, world, body, field):
    response = api_a.post(URL, body, format="json")
    assert response.status_code == 400 and field in error_of(response)["details"]
    assert not Erasure.objects.exists()
    assert Lead.objects.filter(pk=world["lead_a"].pk).exists()


def test_another_tenants_receipt_is_404(api_a, api_b, world):
    receipt = erase(api_a, CALLER)
    assert api_b.get(f"{URL}/{receipt['id']}").status_code == 404
    assert api_b.get(URL).json() == {"erasures": []}


def test_the_command_erases_and_prints_the_receipt(world, tenant_a):
    call_command("privacy_erase", "acme", CALLER_NATIONAL, stdout=(out := io.StringIO()))
    receipt = json.loads(out.getvalue())
    assert receipt["counts"]["calls"] == 3
    assert AuditEntry.objects.get(action="privacy.erasure").actor == "system:privacy_erase"
    assert rows_containing(SECRET_WORDS) == set()


def test_an_owner_erases_a_caller_in_the_admin(owner, world, tenant_a):
    owner.user_permissions.set(Permission.objects.filter(content_type__app_label="privacy_app"))
    client = Client()
    client.force_login(owner)
    # Nothing runs before the number is typed a second time (in any format).
    for typed in ("", "0171 0000000"):
        page = client.post("/admin/privacy_app/erasure/add/", {"tenant": tenant_a.pk, "phone": CALLER_NATIONAL,
                                                               "confirm": typed})
        assert page.status_code == 200 and not Erasure.objects.exists()
        assert "Geben Sie zur Bestätigung dieselbe Nummer" in page.content.decode()
    response = client.post("/admin/privacy_app/erasure/add/", {"tenant": tenant_a.pk, "phone": CALLER_NATIONAL,
                                                               "confirm": CALLER})
    receipt = Erasure.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"/{receipt.pk}/change/")
    assert receipt.counts["calls"] == 3 and receipt.requested_by == "user:olga-owner"
    shown = client.get(f"/admin/privacy_app/erasure/{receipt.pk}/change/")
    # The receipt in words, no JSON keys.
    assert shown.status_code == 200 and "3 Anrufe" in shown.content.decode()
    assert "transcriptLines" not in shown.content.decode()
    assert rows_containing(SECRET_WORDS) == set()
    assert AuditEntry.objects.get(action="privacy.erasure").actor == "user:olga-owner"


def test_the_admin_cannot_erase_for_a_tenant_the_user_is_not_in(outsider, world, tenant_a):
    outsider.user_permissions.set(Permission.objects.filter(content_type__app_label="privacy_app"))
    client = Client()
    client.force_login(outsider)
    page = client.post("/admin/privacy_app/erasure/add/", {"tenant": tenant_a.pk, "phone": CALLER})
    assert page.status_code == 200 and not Erasure.objects.exists()
