from django.core.exceptions import ValidationError

from console.tenants.models import Tenant, slug_validator


def public_tenant(slug: object) -> Tenant | None:
    """The tenant a public post names, or None (unknown, malformed or not a string)."""
    if not isinstance(slug, str):
        return None
    try:
        slug_validator(slug)
    except ValidationError:
        return None
    return Tenant.objects.filter(slug=slug).first()
