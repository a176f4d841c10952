"""Reads of calendars_app for other apps: what it holds of a caller (privacy_app's
export, Art. 15)."""
from collections.abc import Collection
from typing import Any

from django.db.models import Q, QuerySet

from calendars_app.models import Appointment
from console.tenants.models import Tenant


def appointments_of(*, tenant: Tenant, e164: str | None, call_ids: Collection[str] = ()) -> QuerySet[Appointment]:
    """The tenant's appointments booked for the number `e164` or in one of the calls."""
    match = Q(call_id__in=list(call_ids)) if call_ids else Q(pk__in=[])
    if e164:
        match |= Q(caller_e164=e164)
    return Appointment.objects.for_tenant(tenant).filter(match)


def privacy_export(*, tenant: Tenant, e164: str | None, call_ids: Collection[str] = ()) -> dict[str, Any]:
    """`{"appointments": [...]}`, oldest first, JSON-safe."""
    rows = appointments_of(tenant=tenant, e164=e164, call_ids=call_ids).select_related("calendar")
    return {"appointments": [{
        "id": row.pk, "calendar": {"id": row.calendar_id, "name": row.calendar.name}, "type": row.type_name,
        "startsAt": row.starts_at.isoformat(), "endsAt": row.ends_at.isoformat(), "phone": row.caller_e164,
        "name": row.caller_name, "call": row.call_id or None, "status": row.status,
        "createdAt": row.created_at.isoformat(),
    } for row in rows.order_by("created_at", "id")]}
