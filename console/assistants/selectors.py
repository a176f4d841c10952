"""Reads of assistants; every query starts from the tenant."""
from console.assistants.models import Assistant
from console.tenants.models import Tenant


def assistant_of(*, tenant: Tenant, assistant_id: str | None) -> Assistant | None:
    """The tenant's assistant with this id, or None (another tenant's is None too)."""
    if not assistant_id:
        return None
    return Assistant.objects.for_tenant(tenant).filter(pk=assistant_id).first()
