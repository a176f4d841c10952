from django.core.exceptions import ValidationError

from console.compiled import CompiledQuery
from console.tenants.models import Tenant, slug_validator
from leads_app.models import Lead

# The columns of a lead in the Console API (serializers.LeadSerializer), in its order.
LEAD_COLUMNS = ("id", "tenant__slug", "kind", "phone", "preferred_at", "preferred_at_resolved", "page_url",
                "status", "created_at", "consent_version")


def _lead_rows_query(tenant_id, *values, filters, limit):
    leads = Lead.objects.for_tenant(tenant_id).filter(**dict(zip(filters, values, strict=True)))
    return leads.order_by("-created_at", "-id").values_list(*LEAD_COLUMNS)[:limit]


_lead_rows = CompiledQuery(_lead_rows_query, datetimes_as_text=True)


def lead_rows(*, tenant, status=None, kind=None, limit):
    """The tenant's newest leads (optionally of one status and kind) as tuples of
    LEAD_COLUMNS, timestamps as the API writes them: one query, compiled once per
    combination of filters and limit."""
    filters = {name: value for name, value in (("status", status), ("kind", kind)) if value}
    return _lead_rows(tenant.id, *filters.values(), filters=tuple(filters), limit=limit)


def public_tenant(slug):
    """The tenant a public post names, or None (unknown, malformed or not a string)."""
    if not isinstance(slug, str):
        return None
    try:
        slug_validator(slug)
    except ValidationError:
        return None
    return Tenant.objects.filter(slug=slug).first()
