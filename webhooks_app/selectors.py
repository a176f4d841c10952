from collections.abc import Iterable
from functools import reduce
from operator import or_

from django.db.models import Q, QuerySet

from console.pagination import after_cursor, page_of
from console.tenants.models import Tenant
from webhooks_app.models import Delivery, Endpoint


def delivery_page(*, endpoint: Endpoint, limit: int, cursor: str | None = None,
                  state: str | None = None) -> tuple[list[Delivery], str | None]:
    """A page of the endpoint's deliveries, newest first, each with its attempts:
    `(deliveries, next)` (console/pagination.py; the cursor is bound to the endpoint)."""
    deliveries = Delivery.objects.for_tenant(endpoint.tenant).filter(endpoint=endpoint)
    if state:
        deliveries = deliveries.filter(state=state)
    scope = f"webhook-deliveries:{endpoint.pk}"
    deliveries = after_cursor(deliveries, tenant=endpoint.tenant, scope=scope, cursor=cursor)
    rows = list(deliveries.prefetch_related("attempt_set")[:limit + 1])
    return page_of(rows, tenant=endpoint.tenant, scope=scope, limit=limit,
                   position=lambda delivery: (delivery.created_at, delivery.pk))


def deliveries_mentioning(*, tenant: Tenant, texts: Iterable[str] = (),
                          pattern: str | None = None) -> QuerySet[Delivery]:
    """The tenant's deliveries whose payload contains any of `texts` (e.g. object ids)
    or matches the regular expression `pattern` (a number in any written form, see
    `console.phone.written_pattern`): what an export or an erasure of a caller finds.
    Webhooks know no feature: the caller says what to look for."""
    conditions = [Q(payload__contains=text) for text in texts if text]
    if pattern:
        conditions.append(Q(payload__regex=pattern))
    if not conditions:
        return Delivery.objects.none()
    return Delivery.objects.for_tenant(tenant).filter(reduce(or_, conditions))
