"""The one place that decides which tenant a request acts for (CONTRACT §1).

`X-Tenant` names the tenant and overrides host-name detection; without it the host
name of the request picks the tenant. The credential must cover the tenant. Every
tenant-bound query starts from the tenant returned here.
"""
import re

from django.http.request import split_domain_port

from console.credentials.models import ApiKey
from console.errors import TenantForbidden, TenantRequired
from console.tenants.models import SLUG_PATTERN, Tenant

_slug = re.compile(SLUG_PATTERN)


def tenant_for_request(request):
    """The tenant of an authenticated request, or TenantRequired / TenantForbidden."""
    slug = request.headers.get("X-Tenant", "").strip()
    if slug:
        tenant = Tenant.objects.filter(slug=slug).first() if _slug.match(slug) else None
    else:
        domain, _port = split_domain_port(request.get_host())
        tenant = Tenant.objects.filter(hosts__host=domain.lower()).first() if domain else None
        if tenant is None:
            raise TenantRequired()
    # "Unknown" and "not yours" answer alike, so tenant slugs cannot be probed.
    if tenant is None or not credential_covers(request, tenant):
        raise TenantForbidden()
    return tenant


def credential_covers(request, tenant):
    if isinstance(request.auth, ApiKey):
        return request.auth.tenant_id == tenant.id
    user = request.user
    if not (user.is_authenticated and user.is_staff):
        return False
    return user.is_superuser or tenant.memberships.filter(user=user).exists()
