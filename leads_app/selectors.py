from collections.abc import Hashable
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from console.compiled import CompiledQuery
from console.pagination import after_cursor, given, page_of
from console.representation import with_datetimes_as_text
from console.tenants.models import Tenant, slug_validator
from leads_app.models import Lead

# The columns of a lead in the Console API (serializers.LeadSerializer), in its order, but
# for its tenant's slug: the tenant the rows were selected by (no join for it).
LEAD_COLUMNS = ("id", "kind", "phone", "preferred_at", "preferred_at_resolved", "page_url", "status", "created_at",
                "consent_version")


def _lead_rows_query(tenant_id: str, *values: Hashable, filters: tuple[str, ...],
                     limit: int) -> QuerySet[Lead, tuple[Any, ...]]:
    leads = Lead.objects.for_tenant(tenant_id).filter(**dict(zip(filters, values, strict=True)))
    return leads.order_by("-created_at", "-id").values_list(*LEAD_COLUMNS)[:limit]


_lead_rows = CompiledQuery(_lead_rows_query, datetimes_as_text=True)


def lead_rows(*, tenant: Tenant, status: str | None = None, kind: str | None = None,
              limit: int) -> list[tuple[Any, ...]]:
    """The tenant's newest leads (optionally of one status and kind) as tuples of
    LEAD_COLUMNS, timestamps as the API writes them: one query, compiled once per
    combination of filters and limit."""
    filters = {name: value for name, value in (("status", status), ("kind", kind)) if value}
    return _lead_rows(tenant.id, *filters.values(), filters=tuple(filters), limit=limit)


_LEAD_MOMENTS = tuple(LEAD_COLUMNS.index(name) for name in ("preferred_at_resolved", "created_at"))
_CREATED, _ID = LEAD_COLUMNS.index("created_at"), LEAD_COLUMNS.index("id")


def lead_page_rows(*, tenant: Tenant, limit: int, cursor: str | None = None, status: str | None = None,
                   kind: str | None = None, phone: str | None = None, since: datetime | None = None,
                   until: datetime | None = None) -> tuple[list[tuple[Any, ...]], str | None]:
    """A page of `GET /v2/leads` as rows (see `lead_rows`), filtered, after `cursor`:
    `(rows, next)`; one query whatever the depth (console/pagination.py). The first
    page filtered by status and kind only takes the compiled query."""
    if not any((cursor, phone, since, until)):
        rows = lead_rows(tenant=tenant, status=status, kind=kind, limit=limit + 1)
    else:
        leads = Lead.objects.for_tenant(tenant).filter(**given(
            status=status, kind=kind, phone=phone, created_at__gte=since, created_at__lt=until))
        leads = after_cursor(leads, tenant=tenant, scope="leads", cursor=cursor)
        rows = [with_datetimes_as_text(row, _LEAD_MOMENTS) for row in leads.values_list(*LEAD_COLUMNS)[:limit + 1]]
    return page_of(rows, tenant=tenant, scope="leads", limit=limit, position=lambda row: (row[_CREATED], row[_ID]))


def public_tenant(slug: object) -> Tenant | None:
    """The tenant a public post names, or None (unknown, malformed or not a string)."""
    if not isinstance(slug, str):
        return None
    try:
        slug_validator(slug)
    except ValidationError:
        return None
    return Tenant.objects.filter(slug=slug).first()
