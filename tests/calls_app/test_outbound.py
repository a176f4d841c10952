import random
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from calls_app import sim
from calls_app.carriers import sim_carrier
from calls_app.errors import MinuteCapReached
from calls_app.models import Call, SimDial, UsageCounter
from calls_app.services import call_request_outbound, call_transfer
from console.assistants.models import Assistant
from console.idempotency.models import IdempotencyRecord
from console.numbers.services import number_create
from leads_app.models import Lead
from tests.conftest import error_of

pytestmark = pytest.mark.django_db
TO = "+491711234567"


def dial(api, body=None, **headers):
    """One call request; each is a call of its own (its own key) unless a key is given:
    without one, the same request within VOICE_CALL_DEDUP_WINDOW_SEC is one call."""
    headers.setdefault("HTTP_IDEMPOTENCY_KEY", f"test-{uuid.uuid4()}")
    return api.post("/voice/v1/calls", body or {"to": TO}, format="json", **headers)


def set_tenant(tenant, **fields):
    for name, value in fields.items():
        setattr(tenant, name, value)
    tenant.save(update_fields=list(fields))


def test_outbound_request_reserves_minutes_and_sim_carrier_records_the_dial(api_a, tenant_a):
    response = dial(api_a)
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "status", "maxSeconds"}
    assert body["id"].startswith("cl_") and body["status"] == "queued" and body["maxSeconds"] == 600
    dialled = SimDial.objects.get()
    assert (dialled.call_id, dialled.to_e164, dialled.max_seconds) == (body["id"], TO, 600)
    assert UsageCounter.objects.get(tenant=tenant_a).reserved_minutes == 10


def test_grant_is_the_tenants_remaining_minutes_when_below_the_maximum_call_length(api_a, tenant_a):
    set_tenant(tenant_a, minute_cap=14)
    assert dial(api_a).json()["maxSeconds"] == 600
    assert dial(api_a).json()["maxSeconds"] == 240
    refused = dial(api_a)
    assert refused.status_code == 402


def test_reservation_that_leaves_room_for_exactly_one_more_call(api_a, tenant_a):
    set_tenant(tenant_a, minute_cap=3, max_call_minutes=2)
    grants = [dial(api_a) for _ in range(3)]
    assert [g.status_code for g in grants] == [201, 201, 402]
    assert [g.json().get("maxSeconds") for g in grants[:2]] == [120, 60]


def test_exhausted_cap_refuses_with_402_and_details(api_a, tenant_a, number_a, carrier_client):
    for event in carrier_client.inbound_call("CAIN", seconds=600):  # inbound calls count, never refused
        carrier_client.send(event)
    response = dial(api_a)
    assert response.status_code == 402
    error = error_of(response)
    assert error["code"] == "minute_cap_reached"
    assert {k: error["details"][k] for k in ("used", "cap", "remaining")} == {"used": 10, "cap": 10, "remaining": 0}
    assert datetime.fromisoformat(error["details"]["resetsAt"]) > datetime.now(timezone.utc)
    assert not Call.objects.filter(direction="outbound").exists() and not SimDial.objects.exists()


def test_minute_cap_zero_refuses_every_outbound_call(api_a, tenant_a):
    set_tenant(tenant_a, minute_cap=0)
    response = dial(api_a)
    assert response.status_code == 402 and error_of(response)["details"]["remaining"] == 0
    assert not Call.objects.exists()


def test_call_ended_releases_the_reservation_and_books_the_real_minutes(api_a, tenant_a):
    call, statuses = sim.play_outbound(tenant=tenant_a, to=TO, seconds=75)
    assert set(statuses) == {200}
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert (counter.minutes, counter.seconds, counter.reserved_minutes) == (2, 75, 0)
    call.refresh_from_db()
    assert (call.status, call.seconds, call.disclosed) == ("completed", 75, True)
    assert [e.role for e in call.transcript_entries.all()].count("system") == 1


def test_outbound_lifecycle_with_every_event_twice_and_shuffled_books_usage_once(api_a, tenant_a):
    call_id = dial(api_a).json()["id"]
    call = Call.objects.get(pk=call_id)
    events = sim.call_events(carrier_call_id=call.carrier_call_id, started=datetime.now(timezone.utc), seconds=130,
                             event_prefix="shuffle", call_id=call_id)
    batch = events * 2
    random.Random(7).shuffle(batch)
    sim.deliver(batch)
    call.refresh_from_db()
    assert (call.status, call.seconds, call.transcript_entries.count()) == ("completed", 130, len(sim.CONVERSATION))
    usage = api_a.get("/v2/usage").json()
    assert (usage["minutesThisMonth"], usage["secondsThisMonth"], usage["reservedMinutes"]) == (3, 130, 0)


def test_dialled_call_that_never_connects_releases_its_reservation(api_a, tenant_a):
    call_id = dial(api_a).json()["id"]
    call = Call.objects.get(pk=call_id)
    sim.deliver([{"id": "busy-1", "type": "call.ended", "occurredAt": datetime.now(timezone.utc).isoformat(),
                  "data": {"carrierCallId": call.carrier_call_id, "status": "busy", "seconds": 0}}])
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert (counter.minutes, counter.reserved_minutes) == (0, 0)
    assert Call.objects.get(pk=call_id).status == "busy"


@pytest.mark.parametrize("to", ["0171 1234567", "12345", "+49 171 1234567", "", None, 491711234567])
def test_to_number_that_is_not_e164_is_400(api_a, to):
    response = dial(api_a, {"to": to})
    assert response.status_code == 400 and "to" in error_of(response)["details"]
    assert not Call.objects.exists()


def test_cap_is_checked_before_from_is_validated(api_a, tenant_a):
    set_tenant(tenant_a, minute_cap=0)
    assert dial(api_a, {"to": TO, "from": "+493099999999"}).status_code == 402


def test_from_defaults_to_the_tenants_number_else_the_carriers_caller_id(api_a, tenant_a):
    set_tenant(tenant_a, minute_cap=20)
    first = dial(api_a).json()["id"]
    number_create(tenant=tenant_a, e164="+493055501234")
    second = dial(api_a).json()["id"]
    assert Call.objects.get(pk=first).from_e164 == sim_carrier().caller_id
    assert Call.objects.get(pk=second).from_e164 == "+493055501234"


def test_from_must_be_one_of_the_tenants_numbers(api_a, api_b, tenant_a, tenant_b):
    number_create(tenant=tenant_b, e164="+493055509999")
    response = dial(api_a, {"to": TO, "from": "+493055509999"})
    assert response.status_code == 400 and "from" in error_of(response)["details"]
    assert not UsageCounter.objects.filter(reserved_minutes__gt=0).exists()


def test_lead_of_another_tenant_is_a_field_error(api_a, tenant_b):
    lead = Lead.objects.create(tenant=tenant_b, kind="callback", phone=TO)
    response = dial(api_a, {"to": TO, "leadId": lead.pk})
    assert response.status_code == 400 and "leadId" in error_of(response)["details"]


def test_the_call_gets_the_named_assistant_else_the_calling_numbers_else_the_tenants_first(
        api_a, tenant_a, tenant_b):
    """Who talks to the callee where our own bridge carries the call (a twilio carrier):
    its transfer targets and analysis are the call's assistant's."""
    set_tenant(tenant_a, minute_cap=100)
    first = Assistant.objects.create(tenant=tenant_a, name="Allgemein")
    reception = Assistant.objects.create(tenant=tenant_a, name="Empfang")
    number_create(tenant=tenant_a, e164="+493055501234", assistant_id=reception.pk)
    number_create(tenant=tenant_a, e164="+493055505678")

    def assistant_of(body):
        response = dial(api_a, {"to": TO, **body})
        assert response.status_code == 201, response.content
        return Call.objects.get(pk=response.json()["id"]).assistant_id

    assert assistant_of({"from": "+493055501234"}) == reception.pk
    assert assistant_of({}) == reception.pk  # the default number is the first by E.164
    assert assistant_of({"from": "+493055505678"}) == first.pk
    assert assistant_of({"from": "+493055505678", "assistant": reception.pk}) == reception.pk
    theirs = Assistant.objects.create(tenant=tenant_b, name="Fremd")
    for unknown in (theirs.pk, "as_nope"):
        response = dial(api_a, {"to": TO, "assistant": unknown})
        assert response.status_code == 400 and "assistant" in error_of(response)["details"]
    assert UsageCounter.objects.get(tenant=tenant_a).reserved_minutes == 4 * 10


def test_the_callee_can_be_handed_over_to_the_calls_assistants_target(api_a, tenant_a):
    """The assistant's transfer_call on an outbound call reaches its own targets (a call
    without an assistant had none, so the tenant's first assistant could not hand over)."""
    target = {"name": "Praxisteam", "e164": "+4930901829"}
    Assistant.objects.create(tenant=tenant_a, name="Allgemein", tools=["transfer_call"], transfer_targets=[target])
    call_id = dial(api_a).json()["id"]
    assert call_transfer(call_id=call_id, target="Praxisteam") == target


def test_a_tenant_without_assistants_calls_out_without_one(api_a, tenant_a):
    response = dial(api_a)
    assert response.status_code == 201 and Call.objects.get(pk=response.json()["id"]).assistant_id is None


def test_idempotent_retry_returns_the_first_response_and_dials_once(api_a, tenant_a):
    first = dial(api_a, HTTP_IDEMPOTENCY_KEY="k-1")
    again = dial(api_a, HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first.headers
    assert SimDial.objects.count() == 1
    assert UsageCounter.objects.get(tenant=tenant_a).reserved_minutes == 10


def test_same_idempotency_key_with_another_body_is_409(api_a):
    dial(api_a, HTTP_IDEMPOTENCY_KEY="k-2")
    response = dial(api_a, {"to": "+491719999999"}, HTTP_IDEMPOTENCY_KEY="k-2")
    assert response.status_code == 409 and error_of(response)["code"] == "idempotency_key_mismatch"
    assert SimDial.objects.count() == 1


def test_idempotency_keys_are_separate_per_tenant(api_a, api_b, tenant_b):
    assert dial(api_a, HTTP_IDEMPOTENCY_KEY="shared").status_code == 201
    assert "Idempotent-Replayed" not in dial(api_b, HTTP_IDEMPOTENCY_KEY="shared").headers
    assert SimDial.objects.count() == 2


def test_refused_request_is_not_stored_so_a_retry_is_checked_again(api_a, tenant_a):
    set_tenant(tenant_a, minute_cap=0)
    assert dial(api_a, HTTP_IDEMPOTENCY_KEY="k-3").status_code == 402
    set_tenant(tenant_a, minute_cap=5)
    assert dial(api_a, HTTP_IDEMPOTENCY_KEY="k-3").status_code == 201
    assert IdempotencyRecord.objects.get().status_code == 201


def test_invalid_idempotency_key_is_400(api_a):
    response = dial(api_a, HTTP_IDEMPOTENCY_KEY="x" * 256)
    assert response.status_code == 400 and error_of(response)["code"] == "invalid_idempotency_key"


def test_outbound_request_needs_the_tenants_credential(api_a, key_b, tenant_b):
    from tests.conftest import make_client
    assert dial(make_client(tenant="acme")).status_code == 401
    assert dial(make_client(key_b, "acme")).status_code == 403


def test_month_rollover_at_midnight_berlin_frees_the_cap(tenant_a):
    carrier = sim_carrier()
    before = datetime(2025, 1, 31, 22, 59, 59, tzinfo=timezone.utc)  # 23:59:59 in Berlin
    after = datetime(2025, 1, 31, 23, 0, 0, tzinfo=timezone.utc)  # 00:00 on 1 February in Berlin
    call_request_outbound(tenant=tenant_a, carrier=carrier, to_e164=TO, now=before)
    with pytest.raises(MinuteCapReached) as refused:
        call_request_outbound(tenant=tenant_a, carrier=carrier, to_e164=TO, now=before)
    assert refused.value.details["resetsAt"] == "2025-01-31T23:00:00Z"
    granted = call_request_outbound(tenant=tenant_a, carrier=carrier, to_e164=TO, now=after)
    assert (granted.reserved_period, granted.max_seconds) == ("2025-02", 600)


def test_reservation_without_call_ended_is_released_after_max_seconds_and_grace(tenant_a):
    set_tenant(tenant_a, minute_cap=10, max_call_minutes=10)
    carrier = sim_carrier()
    lost = call_request_outbound(tenant=tenant_a, carrier=carrier, to_e164=TO)
    with pytest.raises(MinuteCapReached):
        call_request_outbound(tenant=tenant_a, carrier=carrier, to_e164=TO)
    # Its call.ended never arrives; 10 minutes granted + 15 minutes grace pass.
    Call.objects.filter(pk=lost.pk).update(created_at=lost.created_at - timedelta(minutes=26))
    granted = call_request_outbound(tenant=tenant_a, carrier=carrier, to_e164=TO)
    assert granted.max_seconds == 600
    assert Call.objects.get(pk=lost.pk).reserved_minutes == 0
    assert UsageCounter.objects.get(tenant=tenant_a).reserved_minutes == 10


def test_call_still_within_its_granted_time_keeps_its_reservation(tenant_a):
    set_tenant(tenant_a, minute_cap=10, max_call_minutes=10)
    carrier = sim_carrier()
    running = call_request_outbound(tenant=tenant_a, carrier=carrier, to_e164=TO)
    Call.objects.filter(pk=running.pk).update(created_at=running.created_at - timedelta(minutes=24))
    with pytest.raises(MinuteCapReached):
        call_request_outbound(tenant=tenant_a, carrier=carrier, to_e164=TO)
    assert Call.objects.get(pk=running.pk).reserved_minutes == 10


def test_late_call_ended_after_a_released_reservation_books_minutes_once(api_a, tenant_a):
    set_tenant(tenant_a, minute_cap=10, max_call_minutes=10)
    lost = Call.objects.get(pk=dial(api_a).json()["id"])
    Call.objects.filter(pk=lost.pk).update(created_at=lost.created_at - timedelta(minutes=26))
    assert dial(api_a).status_code == 201  # releases the lost call's reservation
    # The lost call's events arrive after all.
    sim.deliver(sim.call_events(carrier_call_id=lost.carrier_call_id, started=datetime.now(timezone.utc),
                                seconds=90, event_prefix="late", call_id=lost.pk))
    usage = api_a.get("/v2/usage").json()
    assert (usage["minutesThisMonth"], usage["reservedMinutes"]) == (2, 10)


def test_a_claim_without_an_answer_does_not_block_the_key(api_a, tenant_a):
    # Claims commit only with their answer now; one without (left by the earlier
    # two-step scheme, whose worker was killed) frees the key at once.
    IdempotencyRecord.objects.create(scope=f"voice.calls:{tenant_a.pk}", key="k-crash", request_hash="x",
                                     created_at=datetime.now(timezone.utc))
    response = dial(api_a, HTTP_IDEMPOTENCY_KEY="k-crash")
    assert response.status_code == 201
    assert dial(api_a, HTTP_IDEMPOTENCY_KEY="k-crash")["Idempotent-Replayed"] == "true"
    assert SimDial.objects.count() == 1
