"""Writing the audit trail (console.audit.models): `audit_record` and the helpers
that read the actor and the request id of a request."""
import re
from datetime import datetime
from typing import Any

from django.db import transaction
from django.http import HttpRequest

from console.audit.models import AuditEntry
from console.tenants.models import Tenant

_PRINTABLE = re.compile(r"^[\x21-\x7e]{1,100}$")
MAX_FIELD_NAMES = 30


@transaction.atomic
def audit_record(*, actor: str, action: str, tenant: Tenant | None = None, object_id: object = "",
                 request_id: str = "", details: dict[str, Any] | None = None,
                 at: datetime | None = None) -> AuditEntry:
    """One new entry; `details` must hold no personal data (counts, field names)."""
    entry = AuditEntry(
        tenant=tenant, tenant_slug=tenant.slug if tenant is not None else "", actor=actor[:160],
        action=action[:160], object_id=str(object_id or "")[:200], request_id=request_id or "",
        details=details or {},
    )
    if at is not None:
        entry.at = at
    entry.save()
    return entry


def actor_of(request: Any) -> str:
    """`key:<prefix>` for an API key, `user:<name>` for a staff session."""
    api_key = getattr(getattr(request, "user", None), "api_key", None)
    if api_key is not None:
        return f"key:{api_key.prefix}"
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.get_username()}"
    return "anonymous"


def request_id_of(request: HttpRequest) -> str:
    """The request id the request-logging middleware gave the request, else the
    client's `X-Request-Id` if it is a sane token; "" otherwise."""
    value = getattr(request, "request_id", None) or request.META.get("HTTP_X_REQUEST_ID", "")
    value = str(value)
    return value if _PRINTABLE.match(value) else ""


def field_names(data: object) -> list[str]:
    """The names of a JSON object's fields (never their values), for `details`."""
    if not isinstance(data, dict):
        return []
    return sorted(str(name)[:50] for name in data)[:MAX_FIELD_NAMES]
