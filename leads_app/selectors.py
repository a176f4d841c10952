from django.core.exceptions import ValidationError

from console.pagination import page_after
from console.tenants.models import Tenant, slug_validator
from leads_app.models import Lead


def lead_page(*, tenant, limit, cursor=None, status=None, kind=None, phone=None, since=None, until=None):
    """A page of `GET /v2/leads`, filtered, after `cursor`: `(leads, next)`; one query
    whatever the depth (console/pagination.py)."""
    leads = Lead.objects.for_tenant(tenant).select_related("tenant")
    if status:
        leads = leads.filter(status=status)
    if kind:
        leads = leads.filter(kind=kind)
    if phone:
        leads = leads.filter(phone=phone)
    if since:
        leads = leads.filter(created_at__gte=since)
    if until:
        leads = leads.filter(created_at__lt=until)
    return page_after(leads, tenant=tenant, scope="leads", cursor=cursor, limit=limit)


def public_tenant(slug):
    """The tenant a public post names, or None (unknown, malformed or not a string)."""
    if not isinstance(slug, str):
        return None
    try:
        slug_validator(slug)
    except ValidationError:
        return None
    return Tenant.objects.filter(slug=slug).first()
