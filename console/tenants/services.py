import ipaddress
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import models, transaction

from console.errors import ValidationFailed
from console.tenants.models import Membership, Tenant, TenantHost, TenantOrigin, host_validator


def normalize_origin(value: str) -> str:
    """`https://Shop.Example:443/` → `https://shop.example`, as a browser sends it in
    `Origin` (IDN hosts in their ASCII form, IPv6 in brackets); ValueError if `value`
    is not an http(s) origin (`*`, `null`, `javascript:…`, paths, user info)."""
    problem = f"'{value}' is not a web origin (http(s)://host[:port])."
    parts = urlsplit(value.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(problem)
    if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
        raise ValueError(f"'{value}' is not a bare origin: leave out path, query and user.")
    try:
        port = parts.port
        host = _origin_host(parts.hostname)
    except ValueError:
        raise ValueError(problem) from None
    scheme = parts.scheme.lower()
    default_port = {"http": 80, "https": 443}[scheme]
    return f"{scheme}://{host}" + (f":{port}" if port and port != default_port else "")


def _origin_host(hostname: str) -> str:
    """The host of an origin as browsers write it, or ValueError."""
    try:
        address = ipaddress.ip_address(hostname)
    except ValueError:
        pass
    else:
        return f"[{address.compressed}]" if address.version == 6 else address.compressed
    try:
        ascii_host = hostname.encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise ValueError(hostname) from None
    try:
        host_validator(ascii_host)
    except ValidationError:
        raise ValueError(hostname) from None
    return ascii_host


def _check(instance: models.Model, exclude: Iterable[str] = ()) -> None:
    try:
        instance.full_clean(exclude=list(exclude))
    except ValidationError as exc:
        raise ValidationFailed(details=exc.message_dict) from None


@transaction.atomic
def tenant_create(*, slug: str, name: str, minute_cap: int | None = None, max_call_minutes: int | None = None,
                  time_zone: str | None = None, hosts: Iterable[str] = (), origins: Iterable[str] = ()) -> Tenant:
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
def user_invite(*, email: str) -> Any:
    """The account of `email` (compared without case), or a new one made for an
    invitation: inactive, with an unusable password, so nobody can log in with it
    until an operator activates it and a password is set (docs/operations.md)."""
    User = get_user_model()
    email = User.objects.normalize_email(email.strip())
    user = find_user_by_email(email)
    if user is None:
        user = User.objects.create_user(_free_username(email), email, password=None, is_active=False, is_staff=True)
    return user


def find_user_by_email(email: str) -> Any:
    """The oldest account with this e-mail address (Django does not make addresses unique)."""
    return get_user_model()._default_manager.filter(email__iexact=email.strip()).order_by("pk").first()


def _free_username(email: str) -> str:
    User = get_user_model()
    base = email.lower()[:140]
    candidate, number = base, 1
    while User._default_manager.filter(username=candidate).exists():
        number += 1
        candidate = f"{base}-{number}"
    return candidate


@transaction.atomic
def membership_add(*, tenant: Tenant, user: Any, role: str = Membership.Role.MEMBER) -> Membership:
    membership, _ = Membership.objects.get_or_create(tenant=tenant, user=user, defaults={"role": role})
    return membership


@transaction.atomic
def tenant_audio_settings_update(*, tenant: Tenant, recording_enabled: bool | None = None,
                                 transcription_enabled: bool | None = None) -> Tenant:
    """Sets the tenant's audio switches; only the values given (not None) change."""
    changed = []
    for field, value in (("recording_enabled", recording_enabled), ("transcription_enabled", transcription_enabled)):
        if value is not None and getattr(tenant, field) != value:
            setattr(tenant, field, value)
            changed.append(field)
    if changed:
        tenant.save(update_fields=changed)
    return tenant
