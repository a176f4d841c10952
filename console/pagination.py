"""Cursor pagination of the growing lists (`GET /v2/calls`, `GET /v2/leads`).

A page is the next `limit` rows in the list's order, newest first by
`(created_at, id)`, after the last row of the previous page (keyset pagination):
one indexed range query whatever the depth, and stable while rows arrive (a new
row is newer than every cursor, so it never shifts a later page).

The cursor is opaque to clients: the position, the list it belongs to and the tenant
it was issued for, signed with SECRET_KEY (django.core.signing). A cursor of another
tenant or list, or one that was altered or made up, is a 400 `invalid_cursor`.
"""
import datetime

from django.core import signing
from django.db.models import Q

from console.errors import ApiError

SALT = "stimmwerk.cursor.v1"
NEXT_HELP = "The cursor of the next page (send it as `cursor`), or null on the last page."


class InvalidCursor(ApiError):
    status, code = 400, "invalid_cursor"
    message = ("The cursor is not valid here: send the `next` value of the previous page of this list, "
               "with the same credential and tenant, unchanged; omit `cursor` for the first page.")


def cursor_encode(*, tenant, scope, created_at, pk):
    """`created_at` a datetime, or its ISO 8601 text as the API writes it."""
    if isinstance(created_at, str):
        created_at = datetime.datetime.fromisoformat(created_at)
    return signing.dumps([tenant.pk, scope, created_at.isoformat(), pk], salt=SALT, compress=False)


def cursor_decode(token, *, tenant, scope):
    """The position `(created_at, pk)` of a cursor issued for this tenant and list."""
    try:
        tenant_pk, cursor_scope, moment, pk = signing.loads(token, salt=SALT)
        created_at = datetime.datetime.fromisoformat(moment)
    except (signing.BadSignature, ValueError, TypeError):
        raise InvalidCursor(details={"cursor": ["Unknown, altered or malformed cursor."]}) from None
    if tenant_pk != tenant.pk or cursor_scope != scope or not isinstance(pk, str) or created_at.tzinfo is None:
        raise InvalidCursor(details={"cursor": ["This cursor belongs to another list or tenant."]})
    return created_at, pk


def after_cursor(queryset, *, tenant, scope, cursor):
    """`queryset` (newest first) from the row after the cursor's position on."""
    queryset = queryset.order_by("-created_at", "-id")
    if not cursor:
        return queryset
    return after_position(queryset, *cursor_decode(cursor, tenant=tenant, scope=scope))


def after_position(queryset, created_at, pk):
    """The rows of `queryset` after `(created_at, pk)` in newest-first order.
    `created_at` a datetime or an expression (a compiled query's text parameter)."""
    # `created_at <= c` first: an index range the database seeks to (the OR alone
    # made SQLite walk the index from the newest row, in time growing with depth).
    return queryset.filter(created_at__lte=created_at).filter(Q(created_at__lt=created_at) | Q(id__lt=pk))


def page_of(rows, *, tenant, scope, limit, position):
    """`(rows, next)` of up to `limit + 1` rows read newest first: the first `limit`
    and the cursor of the page after them (None when there was no extra row).
    `position(row)` is the row's `(created_at, pk)`."""
    if len(rows) <= limit:
        return list(rows), None
    rows = list(rows[:limit])
    created_at, pk = position(rows[-1])
    return rows, cursor_encode(tenant=tenant, scope=scope, created_at=created_at, pk=pk)
