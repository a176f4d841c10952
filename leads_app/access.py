"""Who may post public leads: web origins (CORS) and the client address.

CONTRACT §6: a post without `Origin` (a server) is accepted; with one, the origin
must be one of the tenant's allowed origins or the service's own origin. The CORS
preflight carries no body, so it cannot know the tenant: it lets through an origin
that any tenant allows, and the post itself is then checked against its tenant.
"""
import ipaddress

from django.conf import settings

from console.tenants.models import TenantOrigin
from console.tenants.services import normalize_origin

PREFLIGHT_MAX_AGE = 600  # seconds a browser may reuse a preflight answer
ALLOWED_HEADERS = "Content-Type, Idempotency-Key"
EXPOSED_HEADERS = "Retry-After, Idempotent-Replayed"


def request_origin(request):
    """The normalised `Origin` of a browser request, "" for none, None if unusable
    (`null` from sandboxed frames and files, or garbage)."""
    raw = request.headers.get("Origin", "")
    if not raw:
        return ""
    try:
        return normalize_origin(raw)
    except ValueError:
        return None


def own_origin(request):
    return f"{request.scheme}://{request.get_host()}".lower()


def origin_allowed_for(request, origin, tenant):
    """Whether a page at `origin` may post for `tenant` (None: an unknown tenant,
    which allows no origin but the service's own)."""
    if origin == own_origin(request):
        return True
    return tenant is not None and TenantOrigin.objects.filter(tenant=tenant, origin=origin).exists()


def origin_allowed_by_any_tenant(request, origin):
    if not origin:
        return False
    if origin == own_origin(request):
        return True
    return TenantOrigin.objects.filter(origin=origin).exists()


def cors_headers(origin):
    """Headers that let the page at `origin` read our answer (success or error, so
    the widget can show the server's message). No credentials: the widget sends no
    cookies."""
    return {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Expose-Headers": EXPOSED_HEADERS,
        "Vary": "Origin",
    }


def preflight_headers(origin):
    return {
        **cors_headers(origin),
        "Access-Control-Allow-Methods": "POST, OPTIONS",
        "Access-Control-Allow-Headers": ALLOWED_HEADERS,
        "Access-Control-Max-Age": str(PREFLIGHT_MAX_AGE),
    }


def client_address(request):
    """The address a rate limit counts: the peer, or with `LEADS_TRUSTED_PROXIES` = n
    the n-th `X-Forwarded-For` entry from the right (the one our own proxies saw).
    IPv6 clients count per /64, the block one household or host usually holds."""
    address = request.META.get("REMOTE_ADDR", "")
    trusted = settings.LEADS_TRUSTED_PROXIES
    if trusted:
        forwarded = [part.strip() for part in request.headers.get("X-Forwarded-For", "").split(",") if part.strip()]
        if len(forwarded) >= trusted:
            address = forwarded[-trusted]
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address or "unknown"
    if ip.version == 6:
        if ip.ipv4_mapped:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)
