from console.pagination import after_cursor, page_of
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
