"""Reads of the privacy features; every query starts from the tenant.

An export or an erasure is about a *subject*: a phone number, or one call (a web call
of the voice agent has no number; its caller is found by the call's id). A number
finds the calls from or to it, the leads with it, and the calls without a number of
their own (web calls, withheld numbers) whose transcript or stored call data (the
agent's session variables, calls_app.call_data) holds it in any written form, and the
campaigns' contacts and blocklist entries of the number (campaigns_app.selectors)."""
import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet, Subquery, TextField
from django.db.models.functions import Cast

from calendars_app import selectors as calendars
from calls_app.call_data import registered_call_data
from calls_app.models import Call, CarrierEvent, TranscriptEntry
from calls_app.serializers import CallSerializer
from campaigns_app import selectors as campaigns
from console.phone import written_pattern
from console.pseudonyms import pseudonym_for
from console.tenants.models import Tenant
from leads_app.models import Lead
from leads_app.serializers import LeadSerializer
from messaging_app.selectors import privacy_export as sms_privacy_export
from messaging_app.selectors import sms_of_subject
from privacy_app.models import DEFAULT_RETENTION_DAYS, ErasedCaller, Erasure, Export, RetentionSettings
from webhooks_app.models import Delivery
from webhooks_app.selectors import deliveries_mentioning

EXPORT_FORMAT = "stimmwerk.privacy-export"
EXPORT_VERSION = 1


@dataclass(frozen=True)
class Subject:
    """Whose data: the caller's number (E.164), or one call of the tenant."""

    tenant: Tenant
    e164: str = ""
    call_id: str = ""

    @property
    def pattern(self) -> str | None:
        """The number in any written form (console.phone.written_pattern), or None."""
        return written_pattern(self.e164) if self.e164 else None


def retention_settings_for(*, tenant: Tenant) -> RetentionSettings:
    """The tenant's settings, or the defaults (unsaved) if it never chose."""
    return (RetentionSettings.objects.filter(tenant=tenant).first()
            or RetentionSettings(tenant=tenant, **DEFAULT_RETENTION_DAYS))


def subject_calls(subject: Subject) -> QuerySet[Call]:
    """The subject's calls: the one call, or the calls from or to the number and the
    calls without a caller's number whose transcript or call data holds it."""
    calls = Call.objects.for_tenant(subject.tenant)
    if subject.call_id:
        return calls.filter(pk=subject.call_id)
    pattern = subject.pattern
    assert pattern is not None  # a subject that is not one call is a number (services._subject)
    mentioned = TranscriptEntry.objects.filter(
        call__tenant=subject.tenant, call__direction=Call.Direction.INBOUND, call__from_e164="",
        text__regex=pattern).values("call_id")
    kept = {call_id for data in registered_call_data()
            for call_id in data.calls_naming(tenant=subject.tenant, pattern=pattern)}
    return calls.filter(Q(from_e164=subject.e164) | Q(to_e164=subject.e164) | Q(pk__in=Subquery(mentioned))
                        | Q(pk__in=sorted(kept)))


def leads_naming(*, tenant: Tenant, e164: str) -> QuerySet[Lead]:
    return Lead.objects.for_tenant(tenant).filter(phone=e164)


def subject_leads(subject: Subject) -> QuerySet[Lead]:
    """The leads with the number; a call's subject has none (its lead, if any, names
    a number: export or erase that)."""
    if not subject.e164:
        return Lead.objects.none()
    return leads_naming(tenant=subject.tenant, e164=subject.e164)


def subject_deliveries(subject: Subject, call_ids: Collection[str]) -> QuerySet[Delivery]:
    """The webhook deliveries whose payload names the number in any form, or one of the
    calls `call_ids` that have no number (whose payloads name them only by id)."""
    numberless = () if not subject.e164 else list(
        Call.objects.filter(pk__in=call_ids, from_e164="", to_e164="").values_list("pk", flat=True))
    texts = [f'"id":"{call_id}"' for call_id in ([subject.call_id] if subject.call_id else numberless)]
    return deliveries_mentioning(tenant=subject.tenant, texts=texts, pattern=subject.pattern)


def exports_holding(*, tenant: Tenant, pseudonym: str = "", call_ids: Collection[str] = (),
                    lead_ids: Collection[str] = ()) -> QuerySet[Export]:
    """The tenant's exports of the number (by its pseudonym), of one of the calls, or
    whose document names one of the calls or leads."""
    condition = Q(call_id__in=list(call_ids))
    if pseudonym:
        condition |= Q(subject=pseudonym)
    for object_id in [*call_ids, *lead_ids]:
        condition |= Q(document_text__contains=f'"{object_id}"')
    return (Export.objects.for_tenant(tenant).annotate(document_text=Cast("document", TextField()))
            .filter(condition))


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


def subject_call_ids(subject: Subject) -> list[str]:
    return list(subject_calls(subject).values_list("pk", flat=True))


def export_size(subject: Subject, call_ids: Collection[str]) -> int:
    """How many rows an export of the subject (whose calls are `call_ids`) reads:
    decides whether it is built now."""
    calls = Call.objects.filter(pk__in=call_ids)
    contacts = campaigns.privacy_export_size(tenant=subject.tenant, e164=subject.e164) if subject.e164 else 0
    return (len(call_ids) + TranscriptEntry.objects.filter(call_id__in=call_ids).count()
            + subject_leads(subject).count() + events_of_calls(calls).count()
            + subject_deliveries(subject, call_ids).count() + contacts
            + sms_of_subject(tenant=subject.tenant, e164=subject.e164, call_ids=call_ids).count())


def export_document(*, subject: Subject, created_at: datetime, expires_at: datetime,
                    call_ids: Collection[str] | None = None) -> dict[str, Any]:
    """Everything the tenant holds about the subject, as one JSON-safe document
    (`call_ids`: its calls, if they were just read)."""
    tenant = subject.tenant
    if call_ids is None:
        call_ids = subject_call_ids(subject)
    calls = Call.objects.filter(pk__in=call_ids).with_transcript().order_by("created_at", "id")
    events = events_of_calls(Call.objects.filter(pk__in=call_ids)).order_by("received_at", "id")
    deliveries = subject_deliveries(subject, call_ids).order_by("created_at", "id")
    document = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "tenant": tenant.slug,
        "phone": subject.e164 or None,
        "callId": subject.call_id or None,
        "createdAt": _iso(created_at),
        "expiresAt": _iso(expires_at),
        "calls": [dict(call) for call in CallSerializer(calls, many=True).data],
        "leads": [dict(lead) for lead in LeadSerializer(subject_leads(subject).select_related("tenant")
                                                         .order_by("created_at", "id"), many=True).data],
        "carrierEvents": [{
            "carrier": event.carrier_id, "eventId": event.event_id, "type": event.type,
            "occurredAt": _iso(event.occurred_at), "receivedAt": _iso(event.received_at), "state": event.state,
            "data": event.data,
        } for event in events],
        "webhookDeliveries": [{
            "id": delivery.pk, "endpoint": delivery.endpoint_id, "eventType": delivery.event_type,
            "state": delivery.state, "attempts": delivery.attempts, "createdAt": _iso(delivery.created_at),
            "finishedAt": _iso(delivery.finished_at), "payload": json.loads(delivery.payload),
        } for delivery in deliveries],
    }
    for data in registered_call_data():
        document[data.name] = data.export(tenant=tenant, call_ids=call_ids)
    # The campaigns' contacts of the number (with their attempts) and its blocklist
    # entries, those an erasure left under its pseudonym included; by number only.
    document.update(campaigns.privacy_export(tenant=tenant, e164=subject.e164) if subject.e164
                    else {"campaignContacts": [], "blocklist": []})
    # The SMS to the number or of its calls (messaging_app), reminders not yet sent among them.
    document["sms"] = sms_privacy_export(tenant=tenant, e164=subject.e164, call_ids=call_ids)
    # The appointments booked for the number (or in the call), calendars_app's records of them.
    document.update(calendars.privacy_export(tenant=tenant, e164=subject.e164 or None, call_ids=call_ids))
    return document


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
