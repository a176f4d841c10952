"""`Idempotency-Key` for POST endpoints (CONTRACT §2), shared by every app.

Usage in a DRF view::

    from console.idempotency.services import idempotent

    def post(self, request):
        return idempotent(request, scope=f"voice.calls:{request.tenant.pk}",
                          handler=lambda: self.create(request), then=self.dial)

`handler()` does the real work and returns a DRF `Response`. It runs in one
transaction together with storing its response, so either both commit or neither
does: a response is stored exactly when the work's side effects are. Behaviour:

- No `Idempotency-Key` header: `handler()` runs (in a transaction), nothing is stored.
- First request with a key: the key is claimed (committed at once, so a concurrent
  request sees it), then `handler()` runs and a 2xx response (status and JSON body)
  is stored in the same transaction, kept for 24 hours. If `handler()` raises or
  answers non-2xx, its transaction is rolled back and the claim dropped: nothing
  happened, so a retry runs afresh.
- `then(response)` (optional) runs after that commit, for work that must not hold a
  transaction (dialling a carrier). Whatever happens there, the claim stays: a retry
  gets the stored response, never the work a second time.
- A replay (same scope, key and request body) within 24 h returns the stored response
  with the header `Idempotent-Replayed: true`; `handler()` does not run.
  `replay(response)` (optional) may turn it into what a retry should now get (e.g.
  the error of a `then` step that failed for good), raising an ApiError.
- The same key with another body (or method/path) → 409 `idempotency_key_mismatch`.
- The same key while the first request is still running → 409
  `idempotency_key_in_use` with `Retry-After: 1` (the first one may still succeed).
  A claim without a response after CLAIM_TIMEOUT is taken as abandoned (its worker
  was killed before the work committed, or the work failed) and the next request
  with the key runs afresh.
- A key longer than 255 characters or with characters outside printable ASCII → 400
  `invalid_idempotency_key`.

`scope` separates keys: include the tenant (or whatever owns the key) and the
endpoint, e.g. `"public.leads:acme"`. Records live in the database
(`console.idempotency.models.IdempotencyRecord`), so several app servers share them;
`purge_expired()` deletes records older than the retention.
"""
import hashlib
import json
import logging
import re
from datetime import timedelta

from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone
from rest_framework.response import Response

from console.errors import ApiError, Conflict, response_for_exception
from console.idempotency.models import IdempotencyRecord

logger = logging.getLogger("console.idempotency")

HEADER = "Idempotency-Key"
RETENTION = timedelta(hours=24)
# Longer than any request may run (gunicorn kills a worker after 30 s by default).
CLAIM_TIMEOUT = timedelta(minutes=2)
_VALID_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")


class InvalidIdempotencyKey(ApiError):
    status, code = 400, "invalid_idempotency_key"
    message = "The Idempotency-Key header must be 1–255 printable ASCII characters without spaces."


class IdempotencyKeyMismatch(Conflict):
    code = "idempotency_key_mismatch"
    message = "This Idempotency-Key was used with a different request; use a new key for a new request."


class IdempotencyKeyInUse(Conflict):
    code = "idempotency_key_in_use"
    message = "A request with this Idempotency-Key is still being processed; retry shortly."


def request_fingerprint(request):
    """Method, path and the parsed body in a canonical form (key order and spacing ignored)."""
    try:
        body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        body = repr(request.data)
    return hashlib.sha256(f"{request.method} {request.path}\n{body}".encode()).hexdigest()


def idempotent(request, *, scope, handler, then=None, replay=None):
    key = request.headers.get(HEADER)
    record = None
    if key is not None:
        if not _VALID_KEY.match(key):
            raise InvalidIdempotencyKey()
        fingerprint = request_fingerprint(request)
        record, claimed = _claim(scope, key, fingerprint)
        if not claimed:
            return _replay(record, fingerprint, replay)
    try:
        response = _work(handler, record)
    except BaseException:
        if record is not None:
            _release(record)
        raise
    if not 200 <= response.status_code < 300:
        if record is not None:
            _release(record)
        return response
    return then(response) if then is not None else response


def _work(handler, record):
    """handler() and the storing of its response, in one transaction."""
    with transaction.atomic():
        response = handler()
        if not 200 <= response.status_code < 300:
            # An error answer changes nothing, whatever the handler wrote.
            transaction.set_rollback(True)
        elif record is not None:
            _store(record, response)
    return response


def _store(record, response):
    record.status_code, record.body = response.status_code, response.data
    record.save(update_fields=["status_code", "body"])


def _claim(scope, key, fingerprint):
    """(record, True) if this request now owns the key, else (existing record, False)."""
    now = timezone.now()
    with transaction.atomic():
        existing = IdempotencyRecord.objects.select_for_update().filter(scope=scope, key=key).first()
        if existing is not None:
            expired = existing.created_at <= now - RETENTION
            abandoned = existing.status_code is None and existing.created_at <= now - CLAIM_TIMEOUT
            if not (expired or abandoned):
                return existing, False
            existing.delete()
        try:
            with transaction.atomic():
                record = IdempotencyRecord.objects.create(
                    scope=scope, key=key, request_hash=fingerprint, created_at=now
                )
        except IntegrityError:
            # A concurrent request with the same key claimed it first.
            return IdempotencyRecord.objects.get(scope=scope, key=key), False
    return record, True


def _release(record):
    """Drops a claim whose work did not commit. Only a claim without a stored response
    is dropped: if the commit went through after all (the connection broke while it
    was acknowledged), its response is kept for the retry. If the database cannot be
    reached now, the claim expires as abandoned after CLAIM_TIMEOUT."""
    try:
        IdempotencyRecord.objects.filter(pk=record.pk, status_code__isnull=True).delete()
    except DatabaseError:
        logger.warning("Could not drop the Idempotency-Key claim %s; it expires in %s", record.pk, CLAIM_TIMEOUT)


def _replay(record, fingerprint, replay):
    if record.request_hash != fingerprint:
        raise IdempotencyKeyMismatch()
    if record.status_code is None:
        raise IdempotencyKeyInUse(headers={"Retry-After": "1"})
    response = Response(record.body, status=record.status_code)
    if replay is not None:
        try:
            response = replay(response)
        except ApiError as exc:
            response = response_for_exception(exc)
    response["Idempotent-Replayed"] = "true"
    return response


def purge_expired(*, now=None):
    """Deletes records past the retention; returns how many."""
    cutoff = (now or timezone.now()) - RETENTION
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=cutoff).delete()
    return deleted
