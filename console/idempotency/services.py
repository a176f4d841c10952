"""`Idempotency-Key` for POST endpoints (CONTRACT §2), shared by every app.

Usage in a DRF view::

    from console.idempotency.services import idempotent

    def post(self, request):
        return idempotent(request, scope=f"voice.calls:{request.tenant.pk}",
                          handler=lambda: self.create(request), then=self.dial)

`handler()` does the real work and returns a DRF `Response`. The key's claim, the
work and the storing of its response are one transaction: they commit together or
not at all, so a stored response exists exactly when the work's side effects do.

- No `Idempotency-Key` header: `handler()` runs (in a transaction), nothing is stored.
- First request with a key: the key is claimed, `handler()` runs, and a 2xx response
  (status and JSON body) is stored, all in one transaction, kept for 24 hours. If
  `handler()` raises or answers non-2xx, or the worker dies, the transaction rolls
  back with the claim: nothing happened, and a retry runs afresh at once.
- A second request with the key while the first is running waits for the first's
  transaction (the claim's unique row; on SQLite the write lock) and then replays
  its answer, or runs afresh if the first rolled back. Work transactions hold no
  external calls, so the wait is short.
- `then(response)` (optional) runs after that commit, for work that must not hold a
  transaction (dialling a carrier). Whatever happens there, the stored response stays:
  a retry gets it and the work is never done a second time.
- A replay (same scope, key and request body) within 24 h returns the stored response
  with the header `Idempotent-Replayed: true`; `handler()` does not run.
  `replay(response)` (optional) may turn it into what a retry should now get (e.g.
  the error of a `then` step that failed for good), raising an ApiError.
- `default_key` (optional): the key of a request that sent none (an endpoint whose
  repeat is harmful makes one with `windowed_key`).
- The same key with another body (or method/path) → 409 `idempotency_key_mismatch`.
- A key longer than 255 characters or with characters outside printable ASCII → 400
  `invalid_idempotency_key`.

`scope` separates keys: include the tenant (or whatever owns the key) and the
endpoint, e.g. `"public.leads:acme"`. Records live in the database
(`console.idempotency.models.IdempotencyRecord`), so several app servers share them;
`purge_expired()` deletes records older than the retention.
"""
import hashlib
import json
import re
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.response import Response

from console.errors import ApiError, Conflict, response_for_exception
from console.idempotency.models import IdempotencyRecord

HEADER = "Idempotency-Key"
RETENTION = timedelta(hours=24)
_VALID_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")


class InvalidIdempotencyKey(ApiError):
    status, code = 400, "invalid_idempotency_key"
    message = "The Idempotency-Key header must be 1–255 printable ASCII characters without spaces."


class IdempotencyKeyMismatch(Conflict):
    code = "idempotency_key_mismatch"
    message = "This Idempotency-Key was used with a different request; use a new key for a new request."


def request_fingerprint(request: Any) -> str:
    """Method, path and the parsed body in a canonical form (key order and spacing ignored)."""
    try:
        body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        body = repr(request.data)
    return hashlib.sha256(f"{request.method} {request.path}\n{body}".encode()).hexdigest()


def idempotent(request: Any, *, scope: str, handler: Callable[[], Response],
               then: Callable[[Response], Response] | None = None,
               replay: Callable[[Response], Response] | None = None,
               default_key: str | None = None) -> Response:
    key = request.headers.get(HEADER, default_key)
    if key is not None and not _VALID_KEY.match(key):
        raise InvalidIdempotencyKey()
    fingerprint = request_fingerprint(request) if key is not None else None
    stored = None
    with transaction.atomic():
        record = _claim(scope, key, fingerprint) if key is not None and fingerprint is not None else None
        if record is not None and record.status_code is not None:
            stored = record
        else:
            response = handler()
            if not 200 <= response.status_code < 300:
                # An error answer changes nothing, whatever the handler wrote; the
                # claim goes with it, so a retry is checked afresh.
                transaction.set_rollback(True)
            elif record is not None:
                _store(record, response)
    if stored is not None:
        return _replay(stored, fingerprint, replay)
    if then is None or not 200 <= response.status_code < 300:
        return response
    return then(response)


def windowed_key(request: Any, *, scope: str, parts: Iterable[str], window_sec: int,
                 now: datetime | None = None) -> str | None:
    """An implicit key for a request that sent none: the same `parts` and body within
    `window_sec` seconds get one key (the previous window's while its record exists,
    so a retry just after a window's edge still finds the first answer). None when
    `window_sec` is 0."""
    if window_sec <= 0:
        return None
    window = int((now or timezone.now()).timestamp()) // window_sec
    fingerprint = request_fingerprint(request)

    def key_of(window: int) -> str:
        digest = hashlib.sha256("\n".join([*parts, str(window), fingerprint]).encode()).hexdigest()
        return f"implicit-{digest[:48]}"

    previous = key_of(window - 1)
    return previous if IdempotencyRecord.objects.filter(scope=scope, key=previous).exists() else key_of(window)


def _claim(scope: str, key: str, fingerprint: str) -> IdempotencyRecord:
    """Within the work's transaction: the answered record of an earlier request with
    this key (to replay), or this request's new claim (status None)."""
    now = timezone.now()
    existing = IdempotencyRecord.objects.select_for_update().filter(scope=scope, key=key).first()
    if existing is not None:
        if existing.status_code is not None and existing.created_at > now - RETENTION:
            return existing
        # Expired, or a claim without an answer (left by an earlier version of this
        # module, which committed claims on their own): the key is free again.
        existing.delete()
    try:
        with transaction.atomic():
            return IdempotencyRecord.objects.create(scope=scope, key=key, request_hash=fingerprint, created_at=now)
    except IntegrityError:
        # A concurrent request with this key committed first (this insert waited for
        # its transaction): replay its answer.
        return IdempotencyRecord.objects.select_for_update().get(scope=scope, key=key)


def _store(record: IdempotencyRecord, response: Response) -> None:
    record.status_code, record.body = response.status_code, response.data
    record.save(update_fields=["status_code", "body"])


def _replay(record: IdempotencyRecord, fingerprint: str | None,
            replay: Callable[[Response], Response] | None) -> Response:
    if record.request_hash != fingerprint:
        raise IdempotencyKeyMismatch()
    response = Response(record.body, status=record.status_code)
    if replay is not None:
        try:
            response = replay(response)
        except ApiError as exc:
            response = response_for_exception(exc)
    response["Idempotent-Replayed"] = "true"
    return response


def purge_expired(*, now: datetime | None = None) -> int:
    """Deletes records past the retention; returns how many."""
    cutoff = (now or timezone.now()) - RETENTION
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=cutoff).delete()
    return deleted
