"""The one place that decides which tenant a request acts for (CONTRACT §1).

`X-Tenant` names the tenant and overrides host-name detection; without it the host
name of the request picks the tenant. The credential must cover the tenant. Every
tenant-bound query starts from the tenant returned here.

An API key covers exactly one tenant, loaded with the key by its authentication: a
request naming that tenant needs no query, and one naming another slug is refused
without looking it up ("unknown" and "not yours" answer alike anyway).
"""
import re

from django.http.request import split_domain_port

from console.credentials.models import ApiKey
from console.errors import TenantForbidden, TenantRequired
from console.tenants.models import SLUG_PATTERN, Tenant, TenantHost

_slug = re.compile(SLUG_PATTERN)


def tenant_for_request(request):
    """The tenant of an authenticated request (DRF's, or Django's with `user` and `auth`),
    or TenantRequired / TenantForbidden; asked by `console.api.TenantBoundMixin.bind_tenant`."""
    slug = request.META.get("HTTP_X_TENANT", "").strip()
    if isinstance(request.auth, ApiKey):
        return _tenant_of_api_key(request, request.auth, slug)
    if slug:
        tenant = Tenant.objects.filter(slug=slug).first() if _slug.match(slug) else None
    else:
        domain = _domain(request)
        tenant = Tenant.objects.filter(hosts__host=domain).first() if domain else None
        if tenant is None:
            raise TenantRequired()
    # "Unknown" and "not yours" answer alike, so tenant slugs cannot be probed.
    if tenant is None or not _user_covers(request.user, tenant):
        raise TenantForbidden()
    return tenant


def _tenant_of_api_key(request, api_key, slug):
    if slug:
        tenant_id = api_key.tenant_id if slug == api_key.tenant.slug else None
    else:
        domain = _domain(request)
        tenant_id = TenantHost.objects.filter(host=domain).values_list("tenant_id", flat=True).first() if domain else None
        if tenant_id is None:
            raise TenantRequired()
    if tenant_id != api_key.tenant_id:
        raise TenantForbidden()
    return api_key.tenant


def _domain(request):
    domain, _port = split_domain_port(request.get_host())
    return domain.lower()


def _user_covers(user, tenant):
    """A login session covers the tenants of a staff member's memberships, or all for a superuser."""
    if not (user.is_authenticated and user.is_staff):
        return False
    return user.is_superuser or tenant.memberships.filter(user=user).exists()
