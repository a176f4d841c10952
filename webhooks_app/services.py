"""Outbound webhooks: endpoints, publishing events, and delivering them (a job).

A feature publishes inside its own transaction (`event_publish`); the deliveries are
rows of that transaction, and the first attempt is queued only after the commit, so
a rolled-back lead is never announced. `delivery_attempt` (the job) sends one
attempt; a failure waits RETRY_DELAYS and is tried again until the delivery is
WEBHOOK_RETRY_WINDOW_SEC old, then it is dead. Any exception in an attempt is a
failed attempt like an error answer. `deliveries_sweep` (every minute) queues every
due delivery, which is how an attempt whose worker died is taken up again once its
lease has run out (within the retry window; after it, the delivery is dead).
"""
import json
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, connection, transaction
from django.db.models import Field, Q, QuerySet
from django.utils import timezone

from console import outbound
from console.jobs.services import job_enqueue, job_enqueue_on_commit
from console.tenants.models import Tenant
from webhooks_app import signing, transport
from webhooks_app.errors import EndpointLimitReached, EndpointUrlRefused
from webhooks_app.models import Attempt, Delivery, Endpoint

logger = logging.getLogger(__name__)

JOB = "webhooks_app.services.delivery_attempt"
# Seconds before attempt n+1 after n failed ones; the last repeats until the window ends.
RETRY_DELAYS = (5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800)
UNEXPECTED_FAILURE = "attempt failed: internal error (logged)"


def retry_delay(failed_attempts: int) -> int:
    return RETRY_DELAYS[min(failed_attempts, len(RETRY_DELAYS)) - 1]


@transaction.atomic
def endpoint_create(*, tenant: Tenant, url: str, event_types: list[str], description: str = "") -> tuple[Endpoint, str]:
    """A new endpoint and its signing secret (shown once). A tenant has at most
    WEBHOOK_MAX_ENDPOINTS (EndpointLimitReached, 409): every endpoint is one more
    request per event. The tenant's row is locked (FOR NO KEY UPDATE, which foreign
    key checks of other writers do not wait for) so that parallel creations count
    one after the other."""
    outbound.url_admit(url, refused=EndpointUrlRefused)
    list(Tenant.objects.select_for_update(no_key=True).filter(pk=tenant.pk).values_list("pk"))
    limit = settings.WEBHOOK_MAX_ENDPOINTS
    if Endpoint.objects.for_tenant(tenant).count() >= limit:
        raise EndpointLimitReached(details={"maxEndpoints": limit})
    endpoint = Endpoint.objects.create(
        tenant=tenant, url=url, event_types=sorted(set(event_types)), description=description,
        secret_nonce=signing.new_nonce(),
    )
    return endpoint, signing.secret_for(endpoint.pk, endpoint.secret_nonce)


@transaction.atomic
def endpoint_update(*, endpoint: Endpoint, **fields: Any) -> Endpoint:
    if "url" in fields:
        outbound.url_admit(fields["url"], refused=EndpointUrlRefused)
    if "event_types" in fields:
        fields["event_types"] = sorted(set(fields["event_types"]))
    for name, value in fields.items():
        setattr(endpoint, name, value)
    endpoint.save(update_fields=[*fields, "updated_at"])
    return endpoint


@transaction.atomic
def endpoint_delete(*, endpoint: Endpoint) -> None:
    endpoint.delete()


@transaction.atomic
def endpoint_rotate_secret(*, endpoint: Endpoint, keep_previous: bool = True, now: datetime | None = None) -> str:
    """A new secret; the one it replaces still signs (beside it) for the overlap, or
    not at all without `keep_previous` (a leaked secret)."""
    now = now or timezone.now()
    endpoint = Endpoint.objects.select_for_update().get(pk=endpoint.pk)
    if keep_previous:
        endpoint.previous_secret_nonce = endpoint.secret_nonce
        endpoint.previous_secret_expires_at = now + timedelta(seconds=settings.WEBHOOK_SECRET_OVERLAP_SEC)
    else:
        endpoint.previous_secret_nonce, endpoint.previous_secret_expires_at = "", None
    endpoint.secret_nonce = signing.new_nonce()
    endpoint.save(update_fields=["previous_secret_nonce", "previous_secret_expires_at", "secret_nonce", "updated_at"])
    return signing.secret_for(endpoint.pk, endpoint.secret_nonce)


def event_publish(*, tenant: Tenant, event_type: str, data: dict[str, Any], key: str,
                  now: datetime | None = None) -> list[Delivery]:
    """Records a delivery of the event for each of the tenant's active endpoints that
    subscribed to it, in the caller's transaction; each is queued after the commit.
    `key` names the event: a second publish of the same key delivers nothing again."""
    if not settings.WEBHOOKS_ENABLED:
        return []
    endpoints = [e for e in Endpoint.objects.for_tenant(tenant).filter(active=True) if event_type in e.event_types]
    if not endpoints:
        return []
    now = now or timezone.now()
    payload = json.dumps({"type": event_type, "timestamp": now.isoformat().replace("+00:00", "Z"), "data": data},
                         separators=(",", ":"), ensure_ascii=False, cls=DjangoJSONEncoder)
    created = []
    for endpoint in endpoints:
        try:
            with transaction.atomic():
                created.append(Delivery.objects.create(
                    tenant=tenant, endpoint=endpoint, event_type=event_type, event_key=key[:200],
                    payload=payload, next_attempt_at=now,
                ))
        except IntegrityError:
            continue  # this event was published before (a carrier's repeated event)
    for delivery in created:
        # A queue that is down is logged, not raised (robust): the sweep sends it later.
        job_enqueue_on_commit(JOB, kwargs={"delivery_id": delivery.pk})
    return created


def _lease(delivery_id: str, now: datetime) -> tuple[Delivery | None, Attempt | None]:
    """Takes the delivery for one attempt (committed at once, so that it shows while
    the request is under way): (delivery, attempt); (None, None) when it is not due or
    someone else has it; (delivery, None) when it is dead now instead."""
    with transaction.atomic():
        # The delivery's row alone: the endpoint's is only read (a lock on it would stop
        # every insert of a delivery to it, e.g. a call's end, until this commits).
        delivery = (Delivery.objects.select_for_update(of=("self",)).select_related("endpoint")
                    .filter(pk=delivery_id).first())
        if (delivery is None or delivery.state != Delivery.State.PENDING or delivery.next_attempt_at > now
                or (delivery.leased_until is not None and delivery.leased_until > now)):
            return None, None
        # An attempt still "sending" lost its worker (the lease ran out). It counts
        # like a failed one: after the retry window there is no further attempt.
        interrupted = Attempt.objects.filter(delivery=delivery, outcome=Attempt.Outcome.SENDING).update(
            outcome=Attempt.Outcome.INTERRUPTED, error="the job worker stopped during the attempt")
        if interrupted and now > delivery.created_at + timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW_SEC):
            delivery.state, delivery.finished_at, delivery.leased_until = Delivery.State.DEAD, now, None
            delivery.save(update_fields=["state", "finished_at", "leased_until"])
            logger.warning("Webhook delivery %s is dead: its last attempt (%s) was interrupted after the retry "
                           "window", delivery.pk, delivery.attempts)
            return delivery, None
        delivery.attempts += 1
        delivery.leased_until = now + timedelta(seconds=settings.WEBHOOK_TIMEOUT_SEC + settings.WEBHOOK_LEASE_EXTRA_SEC)
        delivery.save(update_fields=["attempts", "leased_until"])
        attempt = Attempt.objects.create(tenant_id=delivery.tenant_id, delivery=delivery, number=delivery.attempts,
                                         started_at=now)
    return delivery, attempt


def delivery_attempt(*, delivery_id: str, now: datetime | None = None) -> Delivery | None:
    """The job: one attempt of one delivery, recorded. Returns the delivery, or None
    when there was nothing to do (already sent, not yet due, taken by another worker)."""
    fixed_now = now
    now = now or timezone.now()
    delivery, attempt = _lease(delivery_id, now)
    if delivery is None or attempt is None:
        return delivery  # None (nothing to do), or made dead by an interrupted last attempt
    endpoint = delivery.endpoint
    started = time.monotonic()
    try:
        headers = signing.headers_for(endpoint, msg_id=delivery.pk, payload=delivery.payload, now=now,
                                      timestamp=time.time())
        result = transport.post(endpoint.url, body=delivery.payload.encode(), headers=headers,
                                timeout=settings.WEBHOOK_TIMEOUT_SEC,
                                allow_private=settings.OUTBOUND_ALLOW_PRIVATE_TARGETS)
    except Exception:
        # Whatever it was (a bug, a URL the checks missed, MemoryError …) this attempt
        # failed and takes its place on the retry schedule: raised, the job would leave
        # it "sending" and the sweep would take it up again every minute, for ever.
        logger.exception("Webhook delivery %s to endpoint %s: the attempt failed unexpectedly",
                         delivery.pk, endpoint.pk)
        result = transport.Result(None, UNEXPECTED_FAILURE)
    duration_ms = int((time.monotonic() - started) * 1000)
    done_at = fixed_now or timezone.now()
    with transaction.atomic():
        delivery = Delivery.objects.select_for_update().filter(pk=delivery.pk).first()
        if delivery is None:  # deleted meanwhile (retention, its endpoint): nothing to record
            return None
        attempt.outcome = Attempt.Outcome.SUCCEEDED if result.ok else Attempt.Outcome.FAILED
        attempt.duration_ms, attempt.response_status, attempt.error = duration_ms, result.status, result.error
        attempt.save(update_fields=["outcome", "duration_ms", "response_status", "error"])
        delay = None
        if delivery.state != Delivery.State.PENDING:
            # Erased during the attempt: the attempt is recorded, the delivery stays
            # finished and is never tried again.
            return delivery
        if result.ok:
            delivery.state, delivery.finished_at = Delivery.State.SUCCEEDED, done_at
        else:
            delay = retry_delay(delivery.attempts)
            next_at = done_at + timedelta(seconds=delay)
            if next_at > delivery.created_at + timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW_SEC):
                delivery.state, delivery.finished_at, delay = Delivery.State.DEAD, done_at, None
                logger.warning("Webhook delivery %s to endpoint %s is dead after %s attempts: %s",
                               delivery.pk, endpoint.pk, delivery.attempts, result.error)
            else:
                delivery.next_attempt_at = next_at
        delivery.leased_until = None
        delivery.save(update_fields=["state", "finished_at", "next_attempt_at", "leased_until"])
    if delay is not None and fixed_now is None:
        job_enqueue(JOB, kwargs={"delivery_id": delivery.pk}, delay=delay)
    return delivery


def deliveries_sweep(*, now: datetime | None = None) -> int:
    """The periodic job: queues every due delivery that no worker holds (first
    attempts whose job was lost, retries, attempts whose worker died)."""
    now = now or timezone.now()
    due = list(
        Delivery.objects.filter(state=Delivery.State.PENDING, next_attempt_at__lte=now)
        .filter(Q(leased_until__isnull=True) | Q(leased_until__lte=now))
        .order_by("next_attempt_at").values_list("pk", flat=True)[:1000]
    )
    for pk in due:
        job_enqueue(JOB, kwargs={"delivery_id": pk})
    return len(due)


# --- Privacy (called by privacy_app, which knows the payloads' shapes) -----------------

@transaction.atomic
def deliveries_erase(*, deliveries: QuerySet[Delivery], rewrite: Callable[[dict[str, Any]], dict[str, Any]],
                     now: datetime | None = None) -> int:
    """An erasure's part: each delivery of the queryset gets the payload `rewrite(payload
    as dict)` returns, and one still pending is finished as `erased`, so neither the
    worker nor the sweep sends it again (an attempt under way at this moment completes;
    it cannot be called back). Returns how many deliveries were rewritten or stopped.

    The rows are locked, then written by one prepared UPDATE run for all of them (a
    frequent caller has many deliveries; a save() per row costs a round trip each)."""
    now = now or timezone.now()
    rows = []
    for delivery in deliveries.select_for_update().only("pk", "payload", "state", "finished_at", "leased_until"):
        payload = json.dumps(rewrite(json.loads(delivery.payload)), separators=(",", ":"), ensure_ascii=False,
                             cls=DjangoJSONEncoder)
        pending = delivery.state == Delivery.State.PENDING
        if payload != delivery.payload or pending:
            rows.append((payload, Delivery.State.ERASED if pending else delivery.state,
                         now if pending else delivery.finished_at, None if pending else delivery.leased_until,
                         delivery.pk))
    if rows:
        # Columns of the delivery's own: get_field's type also covers relations, which have none.
        fields = [cast(Field, Delivery._meta.get_field(name))
                  for name in ("payload", "state", "finished_at", "leased_until")]
        quote = connection.ops.quote_name
        sql = "UPDATE {table} SET {columns} WHERE {pk} = %s".format(
            table=quote(Delivery._meta.db_table), pk=quote(Delivery._meta.pk.column),
            columns=", ".join(f"{quote(field.column)} = %s" for field in fields))
        with connection.cursor() as cursor:
            cursor.executemany(sql, [[field.get_db_prep_save(value, connection) for field, value in zip(
                fields, row[:-1], strict=True)] + [row[-1]] for row in rows])
    return len(rows)


@transaction.atomic
def deliveries_purge(*, tenant: Tenant, created_before: datetime, event_type_prefix: str = "") -> int:
    """Retention: deletes the tenant's deliveries created before the moment (of one kind
    of event when `event_type_prefix` is given, e.g. "lead."), with their attempts.
    Returns how many deliveries."""
    old = Delivery.objects.for_tenant(tenant).filter(created_at__lt=created_before)
    if event_type_prefix:
        old = old.filter(event_type__startswith=event_type_prefix)
    return old.delete()[1].get(Delivery._meta.label, 0)
