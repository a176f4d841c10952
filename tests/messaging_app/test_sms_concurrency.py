"""Exactly once under real concurrency: the same SMS asked for by several workers at
once (a tool call retried, a booking's job run twice) is one record and one request to
the provider, on SQLite and PostgreSQL; and the daily cap holds when they all differ."""
import threading

import pytest
from django.db import connection

from console.errors import TenantLimitReached
from messaging_app import services
from messaging_app.models import Sms
from tests.messaging_app.conftest import MOBILE, TOKEN, TOKEN_ID, WHEN, call_from
from tests.messaging_app.sipgate_fake import FakeSipgate

WORKERS = 6


def at_once(work):
    barrier, results = threading.Barrier(WORKERS), [None] * WORKERS

    def run(index):
        barrier.wait(timeout=30)
        try:
            results[index] = work(index)
        except Exception as exc:  # noqa: BLE001 - what each worker met is the result
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


@pytest.fixture
def sipgate(settings, transactional_db, tenant_a):
    with FakeSipgate(token_id=TOKEN_ID, token=TOKEN) as fake:
        settings.MESSAGING_SIPGATE_API_BASE = fake.url
        services.messaging_settings_update(tenant=tenant_a, data={
            "provider": "sipgate", "sipgate_token_id": TOKEN_ID, "sipgate_token": TOKEN, "sipgate_sms_id": "s0"})
        yield fake


def test_one_key_asked_at_once_is_one_sms_sent_once(tenant_a, sipgate):
    call = call_from(tenant_a)

    def send(index):
        sms = services.sms_send(tenant=tenant_a, call_id=call.pk, template="confirmation", variables=WHEN,
                                key="booking-7:confirmation")
        return services.sms_deliver(sms_id=sms.pk) and sms.pk

    results = at_once(send)
    assert all(isinstance(result, str) for result in results), results
    assert len(set(results)) == 1 and Sms.objects.count() == 1
    assert [request["body"]["recipient"] for request in sipgate.requests] == [MOBILE]
    assert Sms.objects.get().status == "sent"


def test_the_daily_cap_holds_when_they_come_at_once(settings, tenant_a, sipgate):
    settings.TENANT_MAX_SMS_PER_DAY = 2
    call = call_from(tenant_a)
    results = at_once(lambda index: services.sms_send(tenant=tenant_a, call_id=call.pk, template="confirmation",
                                                      variables=WHEN, key=f"k{index}"))
    assert sum(isinstance(result, Sms) for result in results) == 2, results
    assert sum(isinstance(result, TenantLimitReached) for result in results) == WORKERS - 2, results
    assert Sms.objects.count() == 2
