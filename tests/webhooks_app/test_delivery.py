import json
import socket
import threading
from datetime import timedelta

import pytest
from django.contrib.admin.utils import quote
from django.db import transaction
from django.utils import timezone
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from calls_app.models import Call
from leads_app.services import lead_create, lead_set_status
from tests.conftest import fail_once
from tests.receiver import closed_port_url
from webhooks_app.models import Attempt, Delivery, Endpoint
from webhooks_app.services import (
    RETRY_DELAYS,
    deliveries_sweep,
    delivery_attempt,
    endpoint_create,
    endpoint_rotate_secret,
)

pytestmark = pytest.mark.django_db
PHONE = "+491711234567"


def new_lead(tenant, capture):
    with capture(execute=True):
        with transaction.atomic():
            return lead_create(tenant=tenant, kind="callback", phone=PHONE)


def subscribe(api, url, events=("lead.created",)):
    response = api.post("/v2/webhooks", {"url": url, "event_types": list(events)}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def retry_until_settled(delivery, limit=40):
    """Runs each due attempt at the moment it is due (the clock moved, not slept)."""
    for _ in range(limit):
        delivery.refresh_from_db()
        if delivery.state != Delivery.State.PENDING:
            return delivery
        delivery_attempt(delivery_id=delivery.pk, now=delivery.next_attempt_at)
    raise AssertionError(f"still pending after {limit} attempts")


def test_delivery_is_signed_and_verifies_with_the_reference_library(api_a, tenant_a, receiver,
                                                                   django_capture_on_commit_callbacks):
    hook = receiver()
    created = subscribe(api_a, hook.url)
    assert created["secret"].startswith("whsec_")
    lead = new_lead(tenant_a, django_capture_on_commit_callbacks)
    assert len(hook.requests) == 1
    _, headers, body = hook.requests[0]
    event = Webhook(created["secret"]).verify(body, headers)
    assert event["type"] == "lead.created" and event["data"]["id"] == lead.pk and event["data"]["phone"] == PHONE
    assert headers["webhook-id"] == Delivery.objects.get().pk
    with pytest.raises(WebhookVerificationError):
        Webhook(created["secret"]).verify(body.replace(PHONE.encode(), b"+490000000000"), headers)


def test_nothing_is_sent_when_the_transaction_rolls_back(api_a, tenant_a, receiver,
                                                         django_capture_on_commit_callbacks):
    hook = receiver()
    subscribe(api_a, hook.url)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError):
        with transaction.atomic():
            lead_create(tenant=tenant_a, kind="callback", phone=PHONE)
            raise RuntimeError("rolled back")
    assert hook.requests == [] and not Delivery.objects.exists()


def test_receiver_failing_twice_then_succeeding_gets_one_success_and_three_recorded_attempts(
        api_a, tenant_a, receiver, django_capture_on_commit_callbacks):
    hook = receiver([500, 503, 200])
    endpoint = subscribe(api_a, hook.url)
    new_lead(tenant_a, django_capture_on_commit_callbacks)
    delivery = Delivery.objects.get()
    assert (delivery.state, delivery.attempts) == ("pending", 1)
    assert delivery.next_attempt_at >= timezone.now() + timedelta(seconds=RETRY_DELAYS[0] - 1)
    delivery = retry_until_settled(delivery)
    assert (delivery.state, delivery.attempts) == ("succeeded", 3)
    assert len(hook.requests) == 3 and len({headers["webhook-id"] for _, headers, _ in hook.requests}) == 1
    listed = api_a.get(f"/v2/webhooks/{endpoint['id']}/deliveries").json()["deliveries"]
    assert [(a["outcome"], a["response_status"]) for a in listed[0]["attempt_list"]] == [
        ("failed", 500), ("failed", 503), ("succeeded", 200)]
    assert all(a["duration_ms"] is not None for a in listed[0]["attempt_list"])


def test_receiver_down_past_the_retry_window_ends_dead_with_every_attempt_recorded(
        api_a, tenant_a, settings, django_capture_on_commit_callbacks, admin_client):
    endpoint = subscribe(api_a, closed_port_url())
    new_lead(tenant_a, django_capture_on_commit_callbacks)
    delivery = retry_until_settled(Delivery.objects.get())
    assert delivery.state == "dead"
    last = Attempt.objects.filter(delivery=delivery).order_by("number").last()
    assert last.started_at <= delivery.created_at + timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW_SEC)
    assert Attempt.objects.filter(delivery=delivery, outcome="failed").count() == delivery.attempts > len(RETRY_DELAYS)
    assert last.error == "connection failed"  # not "refused", nor an errno: no map of the network behind it
    dead = api_a.get(f"/v2/webhooks/{endpoint['id']}/deliveries?state=dead").json()["deliveries"]
    assert [d["id"] for d in dead] == [delivery.pk]
    page = admin_client.get("/admin/webhooks_app/delivery/?state__exact=dead")
    assert page.status_code == 200 and f"/delivery/{quote(delivery.pk)}/change/" in page.content.decode()


def test_events_of_tenant_a_never_reach_tenant_bs_endpoints(api_a, api_b, tenant_a, receiver,
                                                           django_capture_on_commit_callbacks):
    hook_a, hook_b = receiver(), receiver()
    subscribe(api_a, hook_a.url)
    subscribe(api_b, hook_b.url)
    new_lead(tenant_a, django_capture_on_commit_callbacks)
    assert len(hook_a.requests) == 1 and hook_b.requests == []
    assert Delivery.objects.get().tenant == tenant_a


def test_only_subscribed_event_types_are_sent(api_a, tenant_a, receiver, django_capture_on_commit_callbacks):
    hook = receiver()
    subscribe(api_a, hook.url, events=["lead.updated"])
    lead = new_lead(tenant_a, django_capture_on_commit_callbacks)
    assert hook.requests == []
    with django_capture_on_commit_callbacks(execute=True):
        lead_set_status(lead=lead, status="contacted")
    assert [json.loads(body)["type"] for _, _, body in hook.requests] == ["lead.updated"]
    assert json.loads(hook.requests[0][2])["data"]["status"] == "contacted"


def test_call_ended_sent_twice_by_the_carrier_is_delivered_once(api_a, receiver, carrier_client, number_a,
                                                                django_capture_on_commit_callbacks):
    hook = receiver()
    subscribe(api_a, hook.url, events=["call.started", "call.ended"])
    with django_capture_on_commit_callbacks(execute=True):
        events = carrier_client.inbound_call("CA1", seconds=65)
        for event in events + [carrier_client.event("call.ended", {"carrierCallId": "CA1", "status": "completed",
                                                                   "seconds": 65})]:
            assert carrier_client.send(event).status_code in (200, 202)
    types = [json.loads(body)["type"] for _, _, body in hook.requests]
    assert sorted(types) == ["call.ended", "call.started"]
    ended = next(json.loads(body) for _, _, body in hook.requests if b"call.ended" in body)
    assert ended["data"]["id"] == Call.objects.get().pk and ended["data"]["seconds"] == 65


def test_usage_threshold_is_announced_at_80_and_100_percent_once_each(api_a, tenant_a, receiver, carrier_client,
                                                                       number_a, django_capture_on_commit_callbacks):
    tenant_a.minute_cap = 5
    tenant_a.save(update_fields=["minute_cap"])
    hook = receiver()
    subscribe(api_a, hook.url, events=["usage.threshold"])
    with django_capture_on_commit_callbacks(execute=True):
        for index, seconds in enumerate((180, 60, 60, 60)):  # 3, 4, 5, 6 minutes
            for event in carrier_client.inbound_call(f"CT{index}", seconds=seconds):
                carrier_client.send(event)
    announced = [json.loads(body)["data"] for _, _, body in hook.requests]
    assert [(a["percent"], a["usedMinutes"]) for a in announced] == [(80, 4), (100, 5)]


def test_a_rotated_secret_signs_beside_the_new_one_for_24_hours(tenant_a, receiver):
    hook = receiver()
    endpoint, old = endpoint_create(tenant=tenant_a, url=hook.url, event_types=["lead.created"])
    new = endpoint_rotate_secret(endpoint=endpoint)
    assert new != old
    lead = lead_create(tenant=tenant_a, kind="callback", phone=PHONE)
    delivery_attempt(delivery_id=Delivery.objects.get().pk)
    _, headers, body = hook.requests[0]
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):
        assert Webhook(secret).verify(body, headers)["data"]["id"] == lead.pk
    Endpoint.objects.filter(pk=endpoint.pk).update(previous_secret_expires_at=timezone.now() - timedelta(seconds=1))
    lead_set_status(lead=lead, status="contacted")  # not subscribed: subscribe and send a second lead
    Endpoint.objects.filter(pk=endpoint.pk).update(event_types=["lead.created"])
    lead_create(tenant=tenant_a, kind="callback", phone=PHONE)
    delivery_attempt(delivery_id=Delivery.objects.order_by("created_at").last().pk)
    _, headers, body = hook.requests[1]
    assert Webhook(new).verify(body, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(body, headers)


def test_a_redirect_is_not_followed(tenant_a, receiver):
    hook = receiver([302])
    endpoint_create(tenant=tenant_a, url=hook.url, event_types=["lead.created"])
    lead_create(tenant=tenant_a, kind="callback", phone=PHONE)
    delivery = delivery_attempt(delivery_id=Delivery.objects.get().pk)
    assert delivery.state == "pending" and [path for path, _, _ in hook.requests] == ["/hook"]
    attempt = Attempt.objects.get()
    assert (attempt.outcome, attempt.response_status, attempt.error) == ("failed", 302, "redirect not followed")


def test_production_settings_refuse_deliveries_to_loopback_addresses(tenant_a, receiver, settings):
    hook = receiver()
    endpoint, _ = endpoint_create(tenant=tenant_a, url=hook.url.replace("127.0.0.1", "localhost"),
                                  event_types=["lead.created"])
    settings.OUTBOUND_ALLOW_PRIVATE_TARGETS = False
    lead_create(tenant=tenant_a, kind="callback", phone=PHONE)
    delivery_attempt(delivery_id=Delivery.objects.get().pk)
    assert hook.requests == []
    assert Attempt.objects.get().error == ("refused: localhost is not a public host (it does not resolve, or it "
                                           "resolves to an address that is not public)")


def test_the_sweep_queues_due_deliveries_and_leaves_leased_ones(tenant_a, receiver):
    hook = receiver()
    endpoint_create(tenant=tenant_a, url=hook.url, event_types=["lead.created"])
    lead_create(tenant=tenant_a, kind="callback", phone=PHONE)
    lead_create(tenant=tenant_a, kind="callback", phone=PHONE)
    leased, due = Delivery.objects.order_by("created_at")
    Delivery.objects.filter(pk=leased.pk).update(leased_until=timezone.now() + timedelta(minutes=1))
    assert deliveries_sweep() == 1
    assert [headers["webhook-id"] for _, headers, _ in hook.requests] == [due.pk]
    Delivery.objects.filter(pk=leased.pk).update(leased_until=timezone.now() - timedelta(seconds=1))  # ran out
    assert deliveries_sweep() == 1
    assert Delivery.objects.filter(state="succeeded").count() == 2


def stored_endpoint(tenant, url):
    """An endpoint as a row made before URLs were checked this strictly would be."""
    return Endpoint.objects.create(tenant=tenant, url=url, event_types=["lead.created"], secret_nonce="n" * 32)


@pytest.mark.parametrize("url", ["https://hooks.acme.example:99999/h", "https://hooks.acme.example:0/h",
                                 "http://127.0.0.1:+80/h"])
def test_a_stored_url_with_a_port_out_of_range_fails_each_attempt_and_ends_dead(tenant_a, url):
    stored_endpoint(tenant_a, url)
    lead_create(tenant=tenant_a, kind="callback", phone=PHONE)
    delivery = delivery_attempt(delivery_id=Delivery.objects.get().pk)  # recorded, not raised
    attempt = Attempt.objects.get()
    assert (attempt.outcome, attempt.response_status) == ("failed", None) and "1–65535" in attempt.error
    delivery = retry_until_settled(delivery)
    assert delivery.state == "dead"
    assert set(Attempt.objects.values_list("outcome", flat=True)) == {"failed"}


@pytest.mark.parametrize("exception", [ValueError("port out of range"), RuntimeError("a bug"), RecursionError(),
                                       MemoryError(), KeyError("x")])
def test_any_unexpected_exception_in_an_attempt_is_a_failed_attempt_on_the_retry_schedule(
        tenant_a, receiver, monkeypatch, exception, caplog):
    from webhooks_app import transport

    hook = receiver()
    endpoint_create(tenant=tenant_a, url=hook.url, event_types=["lead.created"])
    lead_create(tenant=tenant_a, kind="callback", phone=PHONE)
    fail_once(monkeypatch, transport, "post", exception)
    delivery = delivery_attempt(delivery_id=Delivery.objects.get().pk)
    assert (delivery.state, delivery.attempts, delivery.leased_until) == ("pending", 1, None)
    attempt = Attempt.objects.get()
    assert attempt.started_at + timedelta(seconds=RETRY_DELAYS[0]) <= delivery.next_attempt_at <= (
        timezone.now() + timedelta(seconds=RETRY_DELAYS[0]))
    assert (attempt.outcome, attempt.error) == ("failed", "attempt failed: internal error (logged)")
    assert "a bug" not in attempt.error and any(record.exc_info for record in caplog.records)
    assert retry_until_settled(delivery).state == "succeeded" and len(hook.requests) == 1


def test_an_unexpected_exception_on_every_attempt_ends_the_delivery_dead(tenant_a, receiver, monkeypatch):
    from webhooks_app import signing

    endpoint_create(tenant=tenant_a, url=receiver().url, event_types=["lead.created"])
    lead_create(tenant=tenant_a, kind="callback", phone=PHONE)

    def broken(*args, **kwargs):
        raise TypeError("broken signing")

    monkeypatch.setattr(signing, "headers_for", broken)
    delivery = retry_until_settled(Delivery.objects.get())
    assert delivery.state == "dead" and delivery.attempts > len(RETRY_DELAYS)
    assert set(Attempt.objects.values_list("outcome", flat=True)) == {"failed"}


def test_an_attempt_interrupted_after_the_retry_window_ends_the_delivery_dead(tenant_a, receiver, settings):
    hook = receiver()
    endpoint_create(tenant=tenant_a, url=hook.url, event_types=["lead.created"])
    lead_create(tenant=tenant_a, kind="callback", phone=PHONE)
    delivery = Delivery.objects.get()
    window_end = delivery.created_at + timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW_SEC)
    # The last attempt of the window lost its worker (killed, or the job's timeout).
    Delivery.objects.filter(pk=delivery.pk).update(attempts=9, next_attempt_at=window_end - timedelta(seconds=1),
                                                   leased_until=window_end + timedelta(seconds=29))
    Attempt.objects.create(tenant=tenant_a, delivery=delivery, number=9, started_at=window_end - timedelta(seconds=1))
    assert delivery_attempt(delivery_id=delivery.pk, now=window_end + timedelta(seconds=5)) is None  # still leased
    delivery = delivery_attempt(delivery_id=delivery.pk, now=window_end + timedelta(seconds=60))
    assert (delivery.state, delivery.finished_at) == ("dead", window_end + timedelta(seconds=60))
    assert list(Attempt.objects.values_list("outcome", flat=True)) == ["interrupted"] and hook.requests == []
    assert deliveries_sweep(now=window_end + timedelta(hours=1)) == 0


def test_an_attempt_interrupted_within_the_window_is_sent_again(tenant_a, receiver):
    hook = receiver()
    endpoint_create(tenant=tenant_a, url=hook.url, event_types=["lead.created"])
    lead_create(tenant=tenant_a, kind="callback", phone=PHONE)
    delivery = Delivery.objects.get()
    Delivery.objects.filter(pk=delivery.pk).update(attempts=1, leased_until=delivery.created_at)
    Attempt.objects.create(tenant=tenant_a, delivery=delivery, number=1, started_at=delivery.created_at)
    delivery = delivery_attempt(delivery_id=delivery.pk)
    assert delivery.state == "succeeded" and len(hook.requests) == 1
    assert list(Attempt.objects.values_list("outcome", flat=True)) == ["interrupted", "succeeded"]


@pytest.mark.parametrize("answer", ["64:ff9b::a9fe:a9fe", "64:ff9b:1::a9fe:a9fe", "2002:a9fe:a9fe::1",
                                    "::a9fe:a9fe", "::ffff:169.254.169.254", "fec0::a9fe:a9fe",
                                    "2001:0:808:808::5601:5601", "169.254.169.254"])
def test_production_deliveries_never_connect_to_a_name_that_resolves_to_a_translated_private_address(
        tenant_a, settings, monkeypatch, answer):
    settings.OUTBOUND_ALLOW_PRIVATE_TARGETS = False
    endpoint_create(tenant=tenant_a, url="https://hooks.acme.example/h", event_types=["lead.created"])
    family = socket.AF_INET6 if ":" in answer else socket.AF_INET
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [(family, socket.SOCK_STREAM, 6, "", (answer, 443))])
    connected = []
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: connected.append(a))
    lead_create(tenant=tenant_a, kind="callback", phone=PHONE)
    delivery = delivery_attempt(delivery_id=Delivery.objects.get().pk)
    attempt = Attempt.objects.get()
    assert connected == [] and (delivery.state, attempt.outcome) == ("pending", "failed")
    assert attempt.error.startswith("refused: hooks.acme.example is not a public host") and answer not in attempt.error


def test_a_receiver_that_trickles_its_answer_fails_the_attempt_within_the_timeout(tenant_a, settings):
    """One byte every 50 ms keeps each read under the timeout; the attempt still ends."""
    settings.WEBHOOK_TIMEOUT_SEC = 0.5
    stop = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as server:
        def trickle():
            peer, _ = server.accept()
            with peer:
                peer.recv(65536)
                peer.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                for _ in range(400):  # 20 s at most, then the answer ends (complete, but late)
                    if stop.wait(0.05):
                        return
                    try:
                        peer.sendall(b"x")
                    except OSError:
                        return

        thread = threading.Thread(target=trickle, daemon=True)
        thread.start()
        endpoint_create(tenant=tenant_a, url=f"http://127.0.0.1:{server.getsockname()[1]}/h",
                        event_types=["lead.created"])
        lead_create(tenant=tenant_a, kind="callback", phone=PHONE)
        delivery_attempt(delivery_id=Delivery.objects.get().pk)
        stop.set()
        thread.join(10)
    attempt = Attempt.objects.get()
    assert (attempt.outcome, attempt.error) == ("failed", "no complete answer within 0.5 s")
    assert attempt.duration_ms < 5000


def test_a_socket_timeout_before_the_deadline_fires_is_still_no_answer_in_time(monkeypatch):
    """On a loaded machine the socket's own timeout can beat the deadline's timer thread;
    the attempt is then a timeout, not a broken answer."""
    import contextlib

    from webhooks_app import transport

    @contextlib.contextmanager
    def late_timer(sock, seconds):
        yield lambda: False  # the timer thread has not run yet

    monkeypatch.setattr(transport.outbound, "deadline", late_timer)
    with socket.create_server(("127.0.0.1", 0)) as server:
        result = transport.post(f"http://127.0.0.1:{server.getsockname()[1]}/h", body=b"{}", headers={},
                                timeout=0.3, allow_private=True)
    assert (result.ok, result.error) == (False, "no complete answer within 0.3 s")
