from webhooks_app.models import Delivery


def delivery_list(*, endpoint, state=None, limit):
    """The endpoint's deliveries, newest first, each with its attempts."""
    deliveries = Delivery.objects.for_tenant(endpoint.tenant).filter(endpoint=endpoint)
    if state:
        deliveries = deliveries.filter(state=state)
    return deliveries.prefetch_related("attempt_set")[:limit]
