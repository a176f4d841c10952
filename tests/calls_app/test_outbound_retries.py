"""A retry of an outbound request with its Idempotency-Key never reserves or dials
twice, whichever step of the first request failed: the reservation and the stored
answer commit together, the dial follows, and the claim is never dropped once the
reservation committed."""
import pytest

from calls_app.carriers import CarrierError, SimCarrierAdapter
from calls_app.models import Call, SimDial, UsageCounter
from console.idempotency import services as idempotency
from console.idempotency.models import IdempotencyRecord
from tests.conftest import error_of, fail_once

pytestmark = pytest.mark.django_db
KEY = {"HTTP_IDEMPOTENCY_KEY": "retry-1"}


def dial(api):
    return api.post("/voice/v1/calls", {"to": "+491711234567"}, format="json", **KEY)


def reserved(tenant):
    counter = UsageCounter.objects.filter(tenant=tenant).first()
    return counter.reserved_minutes if counter else 0


@pytest.mark.parametrize("owner, name", [(idempotency, "_claim"), (idempotency, "_store")])
def test_a_failure_before_the_reservation_commits_changes_nothing_and_the_retry_runs(
        api_a, tenant_a, monkeypatch, owner, name):
    fail_once(monkeypatch, owner, name, RuntimeError("injected"))
    first = dial(api_a)
    assert first.status_code == 500 and error_of(first)["code"] == "internal_error"
    assert not Call.objects.exists() and reserved(tenant_a) == 0 and not SimDial.objects.exists()
    assert not IdempotencyRecord.objects.exists()
    retry = dial(api_a)
    assert retry.status_code == 201 and "Idempotent-Replayed" not in retry
    assert Call.objects.count() == 1 and reserved(tenant_a) == 10 and SimDial.objects.count() == 1


def test_a_failure_inside_the_reservation_rolls_it_back_with_the_claim(api_a, tenant_a, monkeypatch):
    from calls_app import services
    fail_once(monkeypatch, services, "_check_lead", RuntimeError("injected"))
    assert dial(api_a).status_code == 500
    assert not Call.objects.exists() and reserved(tenant_a) == 0 and not IdempotencyRecord.objects.exists()
    assert dial(api_a).status_code == 201 and Call.objects.count() == 1


def test_a_dial_that_fails_after_the_reservation_is_never_repeated(api_a, tenant_a, monkeypatch):
    fail_once(monkeypatch, SimCarrierAdapter, "dial", ConnectionError("carrier API timed out"))
    first = dial(api_a)
    assert first.status_code == 500
    call = Call.objects.get()
    assert (call.status, reserved(tenant_a)) == ("queued", 10)
    retry = dial(api_a)
    # The original result: the call that was granted, once; not a second call or reservation.
    assert retry.status_code == 201 and retry["Idempotent-Replayed"] == "true"
    assert retry.json() == {"id": call.pk, "status": "queued", "maxSeconds": 600}
    assert Call.objects.count() == 1 and reserved(tenant_a) == 10 and not SimDial.objects.exists()


def test_a_dial_that_reached_the_carrier_but_lost_its_answer_is_not_dialled_again(api_a, tenant_a, monkeypatch):
    fail_once(monkeypatch, SimCarrierAdapter, "dial", ConnectionError("answer lost"), after_original=True)
    assert dial(api_a).status_code == 500
    retry = dial(api_a)
    assert retry.status_code == 201 and retry.json()["id"] == Call.objects.get().pk
    assert SimDial.objects.count() == 1 and reserved(tenant_a) == 10


def test_a_refused_dial_answers_its_502_again_and_releases_the_minutes_once(api_a, tenant_a, monkeypatch):
    fail_once(monkeypatch, SimCarrierAdapter, "dial", CarrierError("busy trunk"))
    first = dial(api_a)
    assert first.status_code == 502 and error_of(first)["code"] == "carrier_unavailable"
    retry = dial(api_a)
    assert retry.status_code == 502 and error_of(retry)["code"] == "carrier_unavailable"
    assert retry["Idempotent-Replayed"] == "true"
    call = Call.objects.get()
    assert (call.status, call.reserved_minutes, reserved(tenant_a)) == ("failed", 10, 0)
    # A new key is a new request.
    fresh = api_a.post("/voice/v1/calls", {"to": "+491711234567"}, format="json", HTTP_IDEMPOTENCY_KEY="retry-2")
    assert fresh.status_code == 201 and Call.objects.count() == 2 and reserved(tenant_a) == 10


def test_a_failure_after_everything_committed_replays_the_answer(api_a, tenant_a, monkeypatch):
    from calls_app import services
    fail_once(monkeypatch, services, "call_dial", RuntimeError("lost"), after_original=True)
    assert dial(api_a).status_code == 500
    retry = dial(api_a)
    assert retry.status_code == 201 and retry.json()["id"] == Call.objects.get().pk
    assert SimDial.objects.count() == 1 and reserved(tenant_a) == 10
