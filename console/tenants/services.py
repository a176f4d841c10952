from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import transaction

from console.errors import ValidationFailed
from console.tenants.models import Membership, Tenant, TenantHost, TenantOrigin


def normalize_origin(value):
    """`https://Shop.Example:443/` → `https://shop.example`; ValueError if not an origin."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"'{value}' is not a web origin (http(s)://host[:port]).")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError(f"'{value}' is not a bare origin: leave out path, query and user.")
    default_port = {"http": 80, "https": 443}[parts.scheme]
    port = f":{parts.port}" if parts.port and parts.port != default_port else ""
    return f"{parts.scheme}://{parts.hostname.lower()}{port}"


def _check(instance, exclude=()):
    try:
        instance.full_clean(exclude=list(exclude))
    except ValidationError as exc:
        raise ValidationFailed(details=exc.message_dict) from None


@transaction.atomic
def tenant_create(*, slug, name, minute_cap=None, max_call_minutes=None, time_zone=None, hosts=(), origins=()):
    if Tenant.objects.filter(slug=slug).exists():
        raise ValidationFailed.field("slug", f"A tenant '{slug}' exists already.")
    tenant = Tenant(slug=slug, name=name)
    for attribute, value in (("minute_cap", minute_cap), ("max_call_minutes", max_call_minutes),
                             ("time_zone", time_zone)):
        if value is not None:
            setattr(tenant, attribute, value)
    _check(tenant)
    tenant.save()
    for host in hosts:
        host_row = TenantHost(tenant=tenant, host=host.strip().lower())
        _check(host_row, exclude=["tenant"])
        host_row.save()
    for origin in origins:
        try:
            normalized = normalize_origin(origin)
        except ValueError as exc:
            raise ValidationFailed.field("origin", str(exc)) from None
        TenantOrigin.objects.get_or_create(tenant=tenant, origin=normalized)
    return tenant


@transaction.atomic
def membership_add(*, tenant, user, role=Membership.Role.MEMBER):
    membership, _ = Membership.objects.get_or_create(tenant=tenant, user=user, defaults={"role": role})
    return membership


@transaction.atomic
def tenant_audio_settings_update(*, tenant, recording_enabled=None, transcription_enabled=None):
    """Sets the tenant's audio switches; only the values given (not None) change."""
    changed = []
    for field, value in (("recording_enabled", recording_enabled), ("transcription_enabled", transcription_enabled)):
        if value is not None and getattr(tenant, field) != value:
            setattr(tenant, field, value)
            changed.append(field)
    if changed:
        tenant.save(update_fields=changed)
    return tenant
