"""Reads of the privacy features; every query starts from the tenant."""
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet, Subquery

from calls_app.models import Call, CallQuerySet, CarrierEvent, TranscriptEntry
from calls_app.serializers import CallSerializer
from console.tenants.models import Tenant
from leads_app.models import Lead
from leads_app.serializers import LeadSerializer
from privacy_app.models import DEFAULT_RETENTION_DAYS, ErasedCaller, Erasure, Export, RetentionSettings
from privacy_app.pseudonyms import pseudonym_for

EXPORT_FORMAT = "stimmwerk.privacy-export"
EXPORT_VERSION = 1


def retention_settings_for(*, tenant: Tenant) -> RetentionSettings:
    """The tenant's settings, or the defaults (unsaved) if it never chose."""
    return (RetentionSettings.objects.filter(tenant=tenant).first()
            or RetentionSettings(tenant=tenant, **DEFAULT_RETENTION_DAYS))


def calls_naming(*, tenant: Tenant, e164: str) -> CallQuerySet:
    """The tenant's calls from or to the number."""
    return Call.objects.for_tenant(tenant).filter(Q(from_e164=e164) | Q(to_e164=e164))


def leads_naming(*, tenant: Tenant, e164: str) -> QuerySet[Lead]:
    return Lead.objects.for_tenant(tenant).filter(phone=e164)


def events_of_calls(calls: QuerySet[Call]) -> QuerySet[CarrierEvent]:
    """The stored carrier events of `calls` (a queryset of Call), pending or applied.
    Events have no tenant of their own: they are found through the tenant's calls, one
    subquery per carrier (there are few), which the (carrier, call id) index serves."""
    carriers = set(calls.exclude(carrier_call_id=None).order_by().values_list("carrier_id", flat=True).distinct())
    query = Q()
    for carrier_id in carriers:
        ids = calls.filter(carrier_id=carrier_id).exclude(carrier_call_id=None).values("carrier_call_id")
        query |= Q(carrier_id=carrier_id, carrier_call_id__in=Subquery(ids))
    return CarrierEvent.objects.filter(query) if carriers else CarrierEvent.objects.none()


def export_size(*, tenant: Tenant, e164: str) -> int:
    """How many rows an export of the number reads: decides whether it is built now."""
    calls = calls_naming(tenant=tenant, e164=e164)
    return (calls.count() + TranscriptEntry.objects.filter(call__in=calls).count()
            + leads_naming(tenant=tenant, e164=e164).count() + events_of_calls(calls).count())


def export_document(*, tenant: Tenant, e164: str, created_at: datetime, expires_at: datetime) -> dict[str, Any]:
    """Everything the tenant holds that names the number, as one JSON-safe document."""
    calls = calls_naming(tenant=tenant, e164=e164).with_transcript().order_by("created_at", "id")
    events = events_of_calls(calls_naming(tenant=tenant, e164=e164)).order_by("received_at", "id")
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "tenant": tenant.slug,
        "phone": e164,
        "createdAt": _iso(created_at),
        "expiresAt": _iso(expires_at),
        "calls": [dict(call) for call in CallSerializer(calls, many=True).data],
        "leads": [dict(lead) for lead in LeadSerializer(leads_naming(tenant=tenant, e164=e164)
                                                         .select_related("tenant").order_by("created_at", "id"),
                                                         many=True).data],
        "carrierEvents": [{
            "carrier": event.carrier_id, "eventId": event.event_id, "type": event.type,
            "occurredAt": _iso(event.occurred_at), "receivedAt": _iso(event.received_at), "state": event.state,
            "data": event.data,
        } for event in events],
    }


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def export_list(*, tenant: Tenant, limit: int) -> QuerySet[Export]:
    return Export.objects.for_tenant(tenant).defer("document")[:limit]


def export_get(*, tenant: Tenant, export_id: str) -> Export:
    return Export.objects.for_tenant(tenant).get(pk=export_id)


def erasure_list(*, tenant: Tenant, limit: int) -> QuerySet[Erasure]:
    return Erasure.objects.for_tenant(tenant)[:limit]


def erasure_get(*, tenant: Tenant, erasure_id: str) -> Erasure:
    return Erasure.objects.for_tenant(tenant).get(pk=erasure_id)


def erased_caller_pseudonym(*, tenant: Tenant, e164: str, occurred_at: datetime) -> str | None:
    """calls_app's hook: the pseudonym of `e164` if the tenant erased that caller's
    data after `occurred_at` (a call reported late), else None."""
    pseudonym = pseudonym_for(tenant=tenant, e164=e164)
    erased = ErasedCaller.objects.for_tenant(tenant).filter(pseudonym=pseudonym, erased_at__gt=occurred_at)
    return pseudonym if erased.exists() else None
