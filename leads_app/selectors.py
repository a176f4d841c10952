from django.core.exceptions import ValidationError

from console.tenants.models import Tenant, slug_validator
from leads_app.models import Lead


def lead_list(*, tenant, status=None, kind=None, limit):
    leads = Lead.objects.for_tenant(tenant).select_related("tenant")
    if status:
        leads = leads.filter(status=status)
    if kind:
        leads = leads.filter(kind=kind)
    return leads.order_by("-created_at", "-id")[:limit]


def public_tenant(slug):
    """The tenant a public post names, or None (unknown, malformed or not a string)."""
    if not isinstance(slug, str):
        return None
    try:
        slug_validator(slug)
    except ValidationError:
        return None
    return Tenant.objects.filter(slug=slug).first()
